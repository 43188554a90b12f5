__global__ void orphan_kernel(float* x) { x[threadIdx.x] = 0.0f; }

void launch(float* x) { orphan_kernel<<<1, 32>>>(x); cudaDeviceSynchronize(); }
