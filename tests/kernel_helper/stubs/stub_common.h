// Shared by the host and kernel stubs: the TCubeTiling layout both sides see.
#ifndef ASCEND_STUB_COMMON_H
#define ASCEND_STUB_COMMON_H
#include <cstddef>
#include <cstdint>

struct TCubeTiling {
    int32_t usedCoreNum, M, N, Ka, Kb, singleCoreM, singleCoreN, singleCoreK, baseM, baseN, baseK;
    int32_t get_usedCoreNum() const { return usedCoreNum; }
};
#endif
