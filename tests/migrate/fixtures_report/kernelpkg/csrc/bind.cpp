#include <torch/extension.h>

torch::Tensor scale_forward(torch::Tensor x, double s);
torch::Tensor rms_norm_fwd(torch::Tensor x, torch::Tensor w, double eps);
torch::Tensor unused_op(torch::Tensor x);

// m.def("commented_out", &unused_op);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale_forward", &scale_forward, "x * s");
  m.def("rms_norm_fwd", &rms_norm_fwd, "RMSNorm");
  m.def("unused_op", &unused_op, "never called from Python");
}
