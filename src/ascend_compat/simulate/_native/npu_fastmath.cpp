// Host kernels of the simulated NPU for float32 cos, sin and large adds. Not a translation unit of its own: npu_sim.cpp
// #includes it (and _build.py hashes every file in this folder); it needs nothing from torch.
//
// Why: the simulated device runs every op through torch's CPU kernel, and torch 2.13's float32 cos/sin on x86-64
// take 2-3x NumPy's time (SLEEF's 1-ULP routines), so an elementwise cos on the "device" was slower than NumPy on
// the same host. These kernels are the simulator's own: range reduction by rint(x * 2/pi) with pi/2 split in
// three float parts (fused multiply-adds keep each step exact to one rounding of the small remainder), Taylor
// polynomials of sin and cos on [-pi/4, pi/4] (truncation below 3e-9 relative), the quadrant picking one of them
// and its sign. Accuracy: at most 1 ULP from the correctly rounded result over a sweep of float bit patterns
// (tests/cupy/test_sim_fastmath.py); torch's CPU kernel is within 1 ULP too, so the two differ by at most 2 ULP.
// |x| > 65536, inf and nan take the scalar route (double-precision libm, rounded once), as do tail elements.
//
// Large float32 adds (add_stream): torch's kernel writes the result through the cache, so each output line is read
// before it is written; streaming (non-temporal) stores skip that read, a quarter of the memory traffic of an add
// too large for the cache. The sums are a + b rounded once, bit for bit what torch's kernel gives.
//
// Vector code uses GCC's generic vector extensions compiled for AVX-512 and for AVX2+FMA, chosen at run time;
// elsewhere (other compilers, other architectures, older x86) available() is false and torch's kernel runs.
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define SIM_FASTMATH_X86 1
#endif

namespace sim {
namespace fastmath {

constexpr float kLimit = 65536.0f;  // beyond it (and for inf/nan) the scalar route
constexpr int64_t kChunk = 2048;    // elements per chunk: an in-place chunk is staged in an 8 KiB buffer

template <bool kSine>
static inline float scalar(float x) {
  double d = static_cast<double>(x);
  return static_cast<float>(kSine ? std::sin(d) : std::cos(d));
}

#ifdef SIM_FASTMATH_X86

// One vector of lanes; `bad` collects the lanes the scalar route must redo.
template <typename VF, typename VI, bool kSine>
static inline __attribute__((always_inline)) void block(const float* in, float* out, VI& bad) {
  // 2/pi; pi/2 = c1 + c2 + c3 (each a float); 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer.
  const float two_over_pi = 0x1.45f306p-1f, c1 = 0x1.921fb6p+0f, c2 = -0x1.777a5cp-25f, c3 = -0x1.ee59dap-50f;
  const float magic = 0x1.8p23f;
  VF x;
  std::memcpy(&x, in, sizeof(x));
  VF shifted = x * two_over_pi + magic;
  VF q = shifted - magic;
  VI k;  // the quadrant: the low bits of the shifted value's significand are q's low bits
  std::memcpy(&k, &shifted, sizeof(k));
  VF r = x - q * c1;
  r = r - q * c2;
  r = r - q * c3;
  VF r2 = r * r;
  VF c = 1.0f + r2 * (-0.5f + r2 * (1.0f / 24 + r2 * (-1.0f / 720 + r2 * (1.0f / 40320 + r2 * (-1.0f / 3628800)))));
  VF s = r + r * r2 * (-1.0f / 6 + r2 * (1.0f / 120 + r2 * (-1.0f / 5040 + r2 * (1.0f / 362880))));
  if (kSine) {
    k += 3;  // sin(x) = cos(x - pi/2)
  }
  // cos(r + k pi/2) for k mod 4 = 0, 1, 2, 3: cos r, -sin r, -cos r, sin r
  VF v = (k & 1) != 0 ? s : c;
  v = ((k + 1) & 2) != 0 ? -v : v;
  if (kSine) {
    v = x == 0 ? x : v;  // sin(-0) is -0 (the reduction's r - q * c2 turned it into +0)
  }
  std::memcpy(out, &v, sizeof(v));
  VF ax = x < 0 ? -x : x;
  bad |= !(ax <= kLimit);
}

template <typename VF, typename VI, bool kSine>
static inline __attribute__((always_inline)) void run(const float* in, float* out, int64_t n) {
  constexpr int kLanes = static_cast<int>(sizeof(VF) / sizeof(float));
  float staged[kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t len = n - start < kChunk ? n - start : kChunk;
    const float* src = in + start;
    float* dst = out + start;
    if (src == dst) {  // in place: keep the inputs for the scalar redo below
      std::memcpy(staged, src, static_cast<size_t>(len) * sizeof(float));
      src = staged;
    }
    VI bad = {};
    int64_t i = 0;
    for (; i + kLanes <= len; i += kLanes) {
      block<VF, VI, kSine>(src + i, dst + i, bad);
    }
    for (; i < len; ++i) {
      dst[i] = scalar<kSine>(src[i]);
    }
    bool any = false;
    for (int l = 0; l < kLanes; ++l) {
      any = any || bad[l] != 0;
    }
    if (any) {
      for (int64_t j = 0; j < len; ++j) {
        if (!(std::fabs(src[j]) <= kLimit)) {
          dst[j] = scalar<kSine>(src[j]);
        }
      }
    }
  }
}

typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

__attribute__((target("avx512f,fma"))) static void run_avx512(const float* in, float* out, int64_t n, bool sine) {
  if (sine) {
    run<F16, I16, true>(in, out, n);
  } else {
    run<F16, I16, false>(in, out, n);
  }
}

__attribute__((target("avx2,fma"))) static void run_avx2(const float* in, float* out, int64_t n, bool sine) {
  if (sine) {
    run<F8, I8, true>(in, out, n);
  } else {
    run<F8, I8, false>(in, out, n);
  }
}

static int isa() {
  static const int level = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
      return 2;
    }
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
  }();
  return level;
}

// out[i] = a[i] + b[i] with streaming stores; each of a and b is out itself or does not overlap it.
__attribute__((target("avx"))) static void add_stream_avx(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(out + i) & 31) != 0; ++i) {
    out[i] = a[i] + b[i];
  }
  for (; i + 8 <= n; i += 8) {
    _mm256_stream_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  for (; i < n; ++i) {
    out[i] = a[i] + b[i];
  }
  _mm_sfence();  // streaming stores are weakly ordered: make them visible before the op returns
}

#endif  // SIM_FASTMATH_X86

// Whether sin_cos() and add_stream() can run on this host.
static inline bool available() {
#ifdef SIM_FASTMATH_X86
  return isa() > 0;
#else
  return false;
#endif
}

// out[i] = sin(in[i]) or cos(in[i]) for n elements; in and out are the same array or do not overlap.
// Only call when available().
static inline void sin_cos(const float* in, float* out, int64_t n, bool sine) {
#ifdef SIM_FASTMATH_X86
  if (isa() == 2) {
    run_avx512(in, out, n, sine);
  } else {
    run_avx2(in, out, n, sine);
  }
#else
  (void)in;
  (void)out;
  (void)n;
  (void)sine;
#endif
}

// Outputs of at least this many bytes are written with streaming stores (smaller ones stay in the cache, where
// the next op reads them).
constexpr int64_t kStreamMinBytes = int64_t(8) << 20;

// out[i] = a[i] + b[i] for n elements; each of a and b is out itself or does not overlap it. Only call when
// available().
static inline void add_stream(const float* a, const float* b, float* out, int64_t n) {
#ifdef SIM_FASTMATH_X86
  add_stream_avx(a, b, out, n);
#else
  (void)a;
  (void)b;
  (void)out;
  (void)n;
#endif
}

}  // namespace fastmath
}  // namespace sim
