#include <torch/library.h>

__global__ void jit_kernel(float* x) { x[threadIdx.x] += 1.0f; }

torch::Tensor fn(torch::Tensor x) { jit_kernel<<<1, 1>>>(x.data_ptr<float>()); return x; }

TORCH_LIBRARY(jit_ext, m) {
  m.def("fn(Tensor x) -> Tensor");
}
