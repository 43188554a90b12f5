from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

PACKAGE_NAME = "kernelpkg"

setup(
    name=PACKAGE_NAME,
    packages=find_packages(exclude=["tests"]),
    ext_modules=[
        CUDAExtension(
            name="kernelpkg_cuda",
            sources=["csrc/bind.cpp", "csrc/scale_kernel.cu"],
        ),
        CppExtension("kernelpkg_cpu", ["csrc/cpu.cpp"]),
    ],
    cmdclass={"build_ext": BuildExtension},
    install_requires=["torch", "flash-attn", "causal-conv1d>=1.0"],
)
