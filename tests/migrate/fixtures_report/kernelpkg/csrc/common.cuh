#pragma once
#include <cuda_runtime.h>

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  return v;
}

__global__ void rms_norm_kernel(const float* x, const float* w, float* y, int n, float eps) {
  float v = x[threadIdx.x];
  float s = warp_sum(v * v);
  y[threadIdx.x] = v * rsqrtf(s / n + eps) * w[threadIdx.x];
}
