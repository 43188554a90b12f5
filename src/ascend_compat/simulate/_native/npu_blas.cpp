// A host BLAS for the simulated NPU's large float32/float64 matrix products. Not a translation unit of its own:
// npu_sim.cpp #includes it (and _build.py hashes every file in this folder); it needs nothing from torch.
//
// Why: the simulated device runs every op through torch's CPU kernel, and torch's CPU BLAS (MKL in the x86-64
// wheels) takes 1.2-1.3x the time of NumPy's bundled OpenBLAS for a 512^2-4096^2 product on AMD EPYC hosts, so a
// matmul on the "device" was slower than NumPy on the same host. No BLAS is linked here: simulate/_host_blas.py
// finds the cblas_?gemm entry points of the OpenBLAS that NumPy loaded (ctypes) and hands their addresses to
// set(); without them (another BLAS, no NumPy) available() is false and torch's kernel runs, as before.
//
// Thread count: OpenBLAS keeps its own thread pool. A product runs with torch's intra-op thread count
// (torch.set_num_threads), as every other host kernel of the simulator does: when OpenBLAS's count differs it is
// set for the call and put back after it.
#include <atomic>
#include <cstdint>
#include <initializer_list>

namespace sim {
namespace hostblas {

// CBLAS's enumerations (the values are fixed by the CBLAS standard).
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;
constexpr int kTrans = 112;

// Products of at least this many multiply-adds per matrix (256^3) take the host BLAS: below it torch's kernel is
// as fast (measured: 0.95-1.05x at 128^3-256^3) and small products (a training step's) keep their exact path.
constexpr int64_t kMinMacs = int64_t(1) << 24;
// With the second operand transposed (a Linear layer's x @ W^T) OpenBLAS is slower than torch's kernel until much
// larger products (measured, one thread: 1.18-1.26x at 64x512x512 and 64x1024x1024, 1.03-1.06x at 256-512 rows,
// 0.92-0.94x at 1024^3), so those take the host BLAS only from 1024^3.
constexpr int64_t kMinMacsTransB = int64_t(1) << 30;

template <typename Int, typename T>
using Gemm = void (*)(int, int, int, Int, Int, Int, T, const T*, Int, const T*, Int, T, T*, Int);
using GetThreads = int (*)();
using SetThreads = void (*)(int);

struct Table {
  void* sgemm = nullptr;
  void* dgemm = nullptr;
  bool ilp64 = false;  // 64-bit integer arguments (OpenBLAS built with INTERFACE64, NumPy's scipy_openblas64)
  GetThreads get_threads = nullptr;
  SetThreads set_threads = nullptr;
};

// Replaced whole (never mutated in place) so that a reader sees one consistent table; the old ones are leaked on
// purpose (a product may be running on one; set() is called once or twice per process).
static std::atomic<const Table*> g_table{new Table()};

// Products run here (a test's evidence that the route is taken; one relaxed increment per large product).
static std::atomic<int64_t> g_products{0};

static inline void set(uintptr_t sgemm, uintptr_t dgemm, bool ilp64, uintptr_t get_threads, uintptr_t set_threads) {
  auto* t = new Table();
  t->sgemm = reinterpret_cast<void*>(sgemm);
  t->dgemm = reinterpret_cast<void*>(dgemm);
  t->ilp64 = ilp64;
  t->get_threads = reinterpret_cast<GetThreads>(get_threads);
  t->set_threads = reinterpret_cast<SetThreads>(set_threads);
  g_table.store(t, std::memory_order_release);
}

// Whether a product of this element type (4: float, 8: double) can run here.
static inline bool available(int itemsize) {
  const Table* t = g_table.load(std::memory_order_acquire);
  return (itemsize == 4 ? t->sgemm : itemsize == 8 ? t->dgemm : nullptr) != nullptr;
}

static inline bool enabled() {
  const Table* t = g_table.load(std::memory_order_acquire);
  return t->sgemm != nullptr || t->dgemm != nullptr;
}

// One operand of a row-major product: a rows x cols matrix with element strides (s0, s1) is given to BLAS as
// itself (row-major, leading dimension s0) or as the transpose of a row-major matrix (leading dimension s1).
// False where it is neither (other strides, broadcast rows): torch's kernel copies those.
struct Operand {
  int trans = kNoTrans;
  int64_t ld = 1;
};

static inline bool operand(int64_t rows, int64_t cols, int64_t s0, int64_t s1, Operand& op) {
  const int64_t need_rows = cols > 1 ? cols : 1;  // a row-major leading dimension is at least the row length
  const int64_t need_cols = rows > 1 ? rows : 1;
  if ((s1 == 1 || cols == 1) && (rows == 1 || s0 >= need_rows)) {
    op.trans = kNoTrans;
    op.ld = rows == 1 ? need_rows : s0;
    return true;
  }
  if ((s0 == 1 || rows == 1) && (cols == 1 || s1 >= need_cols)) {
    op.trans = kTrans;
    op.ld = cols == 1 ? need_cols : s1;
    return true;
  }
  return false;
}

template <typename Int, typename T>
static inline void call(void* fn, const Operand& oa, const Operand& ob, int64_t m, int64_t n, int64_t k, T alpha,
                        const T* a, const T* b, T beta, T* c, int64_t ldc) {
  reinterpret_cast<Gemm<Int, T>>(fn)(
      kRowMajor, oa.trans, ob.trans, static_cast<Int>(m), static_cast<Int>(n), static_cast<Int>(k), alpha, a,
      static_cast<Int>(oa.ld), b, static_cast<Int>(ob.ld), beta, c, static_cast<Int>(ldc));
}

// c[b] = alpha * a[b] @ b[b] + beta * c[b] for `batch` products of m x k and k x n matrices (c row-major with
// leading dimension ldc), with `threads` BLAS threads. Only call when available(sizeof(T)); 32-bit interfaces
// need every size below 2^31 (callers check fits32()).
template <typename T>
static void gemm(int64_t batch, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t stride_a,
                 const Operand& oa, const T* b, int64_t stride_b, const Operand& ob, T beta, T* c, int64_t stride_c,
                 int64_t ldc, int threads) {
  const Table* t = g_table.load(std::memory_order_acquire);
  void* fn = sizeof(T) == 4 ? t->sgemm : t->dgemm;
  int before = 0;
  if (t->get_threads != nullptr && t->set_threads != nullptr && threads > 0) {
    before = t->get_threads();
    if (before != threads) {
      t->set_threads(threads);
    }
  }
  for (int64_t i = 0; i < batch; ++i) {
    if (t->ilp64) {
      call<int64_t, T>(fn, oa, ob, m, n, k, alpha, a + i * stride_a, b + i * stride_b, beta, c + i * stride_c, ldc);
    } else {
      call<int32_t, T>(fn, oa, ob, m, n, k, alpha, a + i * stride_a, b + i * stride_b, beta, c + i * stride_c, ldc);
    }
  }
  if (before > 0 && before != threads) {
    t->set_threads(before);
  }
  g_products.fetch_add(1, std::memory_order_relaxed);
}

// Whether a 32-bit BLAS interface can take these sizes and leading dimensions.
static inline bool fits32(std::initializer_list<int64_t> values) {
  const Table* t = g_table.load(std::memory_order_acquire);
  if (t->ilp64) {
    return true;
  }
  for (int64_t v : values) {
    if (v > INT32_MAX) {
      return false;
    }
  }
  return true;
}

}  // namespace hostblas
}  // namespace sim
