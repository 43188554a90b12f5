// Stub of torch_npu's op-plugin helper: EXEC_NPU_CMD(aclnnXxx, args...) launches an aclnn operator.
#ifndef ASCEND_STUB_PYTORCH_NPU_HELPER_HPP
#define ASCEND_STUB_PYTORCH_NPU_HELPER_HPP
#include <tuple>
#define EXEC_NPU_CMD(aclnn_api, ...) (void)std::make_tuple(#aclnn_api, __VA_ARGS__)
#endif
