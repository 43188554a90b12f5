#include <torch/extension.h>
#include "common.cuh"

__global__ void scale_kernel(const float* x, float* y, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * s;
}

torch::Tensor scale_forward(torch::Tensor x, double s) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), s, n);
  cudaStreamSynchronize(0);
  return y;
}

torch::Tensor rms_norm_fwd(torch::Tensor x, torch::Tensor w, double eps) {
  auto y = torch::empty_like(x);
  rms_norm_kernel<<<1, 32>>>(x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(), x.numel(), eps);
  return y;
}

torch::Tensor unused_op(torch::Tensor x) { return x; }
