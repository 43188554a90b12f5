// Simulated Ascend NPU: a PrivateUse1 ("npu") backend whose memory is host memory.
//
// What lives here, and why in C++ rather than Python:
//   * an allocator with per-device accounting and an optional limit (raises torch.OutOfMemoryError);
//   * a device guard (current device, streams, timing events) so that DeviceGuard, torch.Stream/Event and
//     torch.accelerator work exactly as for a compiled backend;
//   * hooks (generators, pinned memory, storage resize);
//   * a boxed fallback that runs every aten op through its CPU kernel on zero-copy CPU aliases of the npu
//     tensors and re-wraps the results, again without copying. That keeps an op's overhead at a few
//     microseconds (a tensor-subclass technique in pure Python costs 17-35 us per op); float32 cos/sin, and adds
//     too large for the cache, run the simulator's own host kernels instead (npu_fastmath.cpp);
//   * autocast kernels for AutocastPrivateUse1 (torch registers none for PrivateUse1);
//   * the simulated limits: chip dtype support, float64 policy, "unsupported op" CPU fallback warnings.
// Everything else (torch.npu, torch_npu look-alike, fused ops, hccl) is Python on top of this.

#include <torch/extension.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/autocast_mode.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/native/Resize.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/utils/pybind.h>

#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "npu_fastmath.cpp"  // one translation unit: the simulator's own float32 cos/sin/add host kernels
#include "npu_blas.cpp"      // and its host BLAS for large matrix products

namespace sim {

constexpr c10::DeviceType kNpu = c10::DeviceType::PrivateUse1;
constexpr int kMaxDevices = 64;

// ----------------------------------------------------------------------------------------------------------
// Configuration and per-device state
// ----------------------------------------------------------------------------------------------------------

struct DeviceStats {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> num_allocs{0};
  std::atomic<int64_t> num_frees{0};
  std::atomic<int64_t> num_ooms{0};
  std::atomic<int64_t> limit{-1};  // bytes; -1 = total capacity
  std::atomic<int64_t> total{64LL << 30};
};

static int g_device_count = 1;
static DeviceStats g_stats[kMaxDevices];
static thread_local int g_current_device = 0;
static std::atomic<bool> g_bf16_supported{true};
static std::atomic<int> g_float64_policy{0};  // 0 allow, 1 warn, 2 error
static std::string& g_chip = *new std::string("Ascend910B");

static void check_index(int64_t index) {
  TORCH_CHECK(
      index >= 0 && index < g_device_count,
      "Invalid NPU device ordinal ", index, ": the simulated NPU has ", g_device_count,
      " device(s) (ascend_compat.simulate.install(device_count=...))");
}

static c10::DeviceIndex device_index_or_current(std::optional<c10::Device> device) {
  if (device.has_value() && device->has_index()) {
    check_index(device->index());
    return device->index();
  }
  return static_cast<c10::DeviceIndex>(g_current_device);
}

static std::string format_bytes(int64_t n) {
  char buf[64];
  double v = static_cast<double>(n);
  if (v >= (1LL << 30)) {
    snprintf(buf, sizeof(buf), "%.2f GiB", v / (1LL << 30));
  } else if (v >= (1 << 20)) {
    snprintf(buf, sizeof(buf), "%.2f MiB", v / (1 << 20));
  } else {
    snprintf(buf, sizeof(buf), "%.2f KiB", v / 1024.0);
  }
  return buf;
}

static void check_dtype(caffe2::TypeMeta dtype) {
  if (!g_bf16_supported.load(std::memory_order_relaxed) && dtype == caffe2::TypeMeta::Make<c10::BFloat16>()) {
    TORCH_CHECK(
        false, "torch.bfloat16 is not supported on ", g_chip,
        " (the chip has no bf16 compute); use torch.float16 instead");
  }
}

// Accounting shared by the allocator and by zero-copy wrapping of CPU kernel outputs.
static void account_alloc(int dev, int64_t nbytes) {
  auto& s = g_stats[dev];
  int64_t limit = s.limit.load(std::memory_order_relaxed);
  int64_t cap = limit >= 0 ? limit : s.total.load(std::memory_order_relaxed);
  int64_t now = s.allocated.fetch_add(nbytes) + nbytes;
  if (nbytes > 0 && now > cap) {
    s.allocated.fetch_sub(nbytes);
    s.num_ooms.fetch_add(1);
    TORCH_CHECK_WITH(
        OutOfMemoryError, false, "NPU out of memory. Tried to allocate ", format_bytes(nbytes), " (NPU ", dev,
        "; ", format_bytes(s.total.load()), " total capacity; ", format_bytes(now - nbytes),
        " already allocated; ", format_bytes(cap - (now - nbytes)), " free; limit ", format_bytes(cap),
        ") [simulated]");
  }
  s.num_allocs.fetch_add(1, std::memory_order_relaxed);
  int64_t peak = s.peak.load(std::memory_order_relaxed);
  while (now > peak && !s.peak.compare_exchange_weak(peak, now)) {
  }
}

static void account_free(int dev, int64_t nbytes) {
  g_stats[dev].allocated.fetch_sub(nbytes, std::memory_order_relaxed);
  g_stats[dev].num_frees.fetch_add(1, std::memory_order_relaxed);
}

// ----------------------------------------------------------------------------------------------------------
// Allocator
// ----------------------------------------------------------------------------------------------------------

// Host block cache: the simulated device's caching allocator (torch_npu's and CUDA's allocators cache freed
// blocks too). Blocks of 64 KiB and more are kept per device and rounded size when freed and handed out again,
// so a loop that allocates the same shapes stops paying for fresh pages (allocation and first touch cost more
// than the arithmetic in a large elementwise op). It serves the npu allocator and, inside the CPU-kernel
// fallback, the CPU allocator (the kernel's outputs become npu tensors without a copy). empty_cache() frees it.
// Like the other state reached from deleters it lives on the heap and is never destroyed.
constexpr size_t kCacheMinBytes = size_t(1) << 16;

static size_t cache_round(size_t n) {
  const size_t page = 4096, chunk = size_t(2) << 20;
  return n < (size_t(1) << 20) ? (n + page - 1) / page * page : (n + chunk - 1) / chunk * chunk;
}

struct CachedBlockInfo {
  size_t rounded;
  int device;
};

struct HostCache {
  std::mutex mu;
  std::unordered_map<void*, CachedBlockInfo> live;
  std::unordered_map<size_t, std::vector<void*>> free_blocks[kMaxDevices];
  std::atomic<int64_t> cached[kMaxDevices];
};
static HostCache& g_cache = *new HostCache();  // () zero-initializes the counters
static c10::DeleterFnPtr g_base_cpu_deleter = nullptr;  // the CPU allocator's own, for blocks not ours

// Fresh large blocks ask for transparent huge pages where the kernel gives them only on request ("madvise" mode),
// as NumPy does for its arrays: first touch of a 40 MB block then takes ~20 page faults instead of ~10,000
// (about 3x faster for a 10M-element add that writes fresh memory). torch's CPU allocator does not ask.
constexpr size_t kHugePageMinBytes = size_t(4) << 20;

static bool huge_pages_on_request() {
  static const bool on_request = [] {
    FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == nullptr) {
      return false;
    }
    char buf[128] = {0};
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    return std::strstr(std::string(buf, n).c_str(), "[madvise]") != nullptr;
  }();
  return on_request;
}

static void advise_huge_pages(void* p, size_t nbytes) {
#ifdef MADV_HUGEPAGE
  if (p == nullptr || nbytes < kHugePageMinBytes || !huge_pages_on_request()) {
    return;
  }
  const uintptr_t page = 4096, start = reinterpret_cast<uintptr_t>(p), first = (start + page - 1) / page * page;
  const size_t length = (nbytes - (first - start)) / page * page;  // whole pages inside the block
  (void)madvise(reinterpret_cast<void*>(first), length, MADV_HUGEPAGE);  // advice only: failure changes nothing
#else
  (void)p;
  (void)nbytes;
#endif
}

static void* cache_take(int dev, size_t nbytes) {
  size_t r = cache_round(nbytes);
  {
    std::lock_guard<std::mutex> lk(g_cache.mu);
    auto it = g_cache.free_blocks[dev].find(r);
    if (it != g_cache.free_blocks[dev].end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      g_cache.cached[dev].fetch_sub(static_cast<int64_t>(r), std::memory_order_relaxed);
      g_cache.live[p] = {r, dev};
      return p;
    }
  }
  void* p = c10::alloc_cpu(r);
  advise_huge_pages(p, r);
  std::lock_guard<std::mutex> lk(g_cache.mu);
  g_cache.live[p] = {r, dev};
  return p;
}

static void cache_give(void* p) {
  {
    std::lock_guard<std::mutex> lk(g_cache.mu);
    auto it = g_cache.live.find(p);
    if (it != g_cache.live.end()) {
      CachedBlockInfo info = it->second;
      g_cache.live.erase(it);
      g_cache.free_blocks[info.device][info.rounded].push_back(p);
      g_cache.cached[info.device].fetch_add(static_cast<int64_t>(info.rounded), std::memory_order_relaxed);
      return;
    }
  }
  // Not a cached block: the CPU allocator's raw_deallocate of one of its own (see FallbackCpuAllocator).
  if (g_base_cpu_deleter != nullptr) {
    g_base_cpu_deleter(p);
  } else {
    c10::free_cpu(p);
  }
}

static void cache_release(int dev) {
  std::vector<void*> blocks;
  {
    std::lock_guard<std::mutex> lk(g_cache.mu);
    for (auto& kv : g_cache.free_blocks[dev]) {
      blocks.insert(blocks.end(), kv.second.begin(), kv.second.end());
    }
    g_cache.free_blocks[dev].clear();
    g_cache.cached[dev].store(0);
  }
  for (void* p : blocks) {
    c10::free_cpu(p);
  }
}

struct OwnedBlock {
  void* data;
  int64_t nbytes;
  int device;
};

static void delete_owned(void* ctx) {
  auto* b = static_cast<OwnedBlock*>(ctx);
  if (b->data != nullptr) {
    if (static_cast<size_t>(b->nbytes) >= kCacheMinBytes) {
      cache_give(b->data);
    } else {
      c10::free_cpu(b->data);
    }
  }
  account_free(b->device, b->nbytes);
  delete b;
}

// A block that borrows a CPU storage (an op's output), keeping it alive.
struct BorrowedBlock {
  c10::Storage cpu;
  int64_t nbytes;
  int device;
};

static void delete_borrowed(void* ctx) {
  auto* b = static_cast<BorrowedBlock*>(ctx);
  account_free(b->device, b->nbytes);
  delete b;
}

struct NpuAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    int dev = g_current_device;
    account_alloc(dev, static_cast<int64_t>(nbytes));
    void* data = nullptr;
    try {
      data = nbytes >= kCacheMinBytes ? cache_take(dev, nbytes) : (nbytes ? c10::alloc_cpu(nbytes) : nullptr);
    } catch (...) {
      account_free(dev, static_cast<int64_t>(nbytes));
      throw;
    }
    auto* ctx = new OwnedBlock{data, static_cast<int64_t>(nbytes), dev};
    return {data, ctx, &delete_owned, c10::Device(kNpu, static_cast<c10::DeviceIndex>(dev))};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return nullptr;  // contexts differ from data pointers
  }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    default_copy_data(dest, src, count);
  }
};

static NpuAllocator g_allocator;
REGISTER_ALLOCATOR(kNpu, &g_allocator);

// While the fallback runs a CPU kernel for an npu op: the npu device the kernel's outputs will live on.
static thread_local int t_fallback_device = -1;

struct FallbackDeviceScope {
  int saved;
  explicit FallbackDeviceScope(int dev) : saved(t_fallback_device) {
    t_fallback_device = dev;
  }
  ~FallbackDeviceScope() {
    t_fallback_device = saved;
  }
};

// The process's CPU allocator, wrapped: inside the fallback, large blocks come from the device's host cache;
// everywhere else (and on OpenMP worker threads) it is the CPU allocator it wraps, unchanged.
struct FallbackCpuAllocator final : c10::Allocator {
  c10::Allocator* base = nullptr;
  c10::DataPtr allocate(size_t nbytes) override {
    int dev = t_fallback_device;
    if (dev < 0 || nbytes < kCacheMinBytes) {
      return base->allocate(nbytes);
    }
    void* p = cache_take(dev, nbytes);
    return {p, p, &cache_give, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &cache_give;  // ours go back to the cache; the wrapped allocator's go to its own deleter
  }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    default_copy_data(dest, src, count);
  }
};

static FallbackCpuAllocator& g_fallback_cpu_allocator = *new FallbackCpuAllocator;

static void install_fallback_cpu_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    c10::Allocator* base = c10::GetCPUAllocator();
    if (base == &g_fallback_cpu_allocator) {
      return;
    }
    g_fallback_cpu_allocator.base = base;
    g_base_cpu_deleter = base->raw_deleter();
    c10::SetCPUAllocator(&g_fallback_cpu_allocator, /*priority=*/1);
  });
}

// Pinned host memory: ordinary host memory whose pointers are remembered, so is_pinned() answers truly.
// State reached from deleters and kernels lives on the heap and is never destroyed: a tensor freed during static
// destruction at exit (after this library's statics are gone) must still find it intact.
static std::mutex& g_pinned_mu = *new std::mutex;
static std::unordered_set<const void*>& g_pinned = *new std::unordered_set<const void*>;

static void delete_pinned(void* ptr) {
  {
    std::lock_guard<std::mutex> lk(g_pinned_mu);
    g_pinned.erase(ptr);
  }
  c10::free_cpu(ptr);
}

struct PinnedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* data = c10::alloc_cpu(nbytes ? nbytes : 1);
    {
      std::lock_guard<std::mutex> lk(g_pinned_mu);
      g_pinned.insert(data);
    }
    return {data, data, &delete_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override {
    return &delete_pinned;
  }
  void copy_data(void* dest, const void* src, std::size_t count) const final {
    default_copy_data(dest, src, count);
  }
};

static PinnedAllocator g_pinned_allocator;

static void grow_storage(const c10::Storage& storage, size_t nbytes) {
  if (nbytes <= storage.nbytes()) {
    return;
  }
  int dev = storage.device().has_index() ? storage.device().index() : g_current_device;
  int saved = g_current_device;
  g_current_device = dev;
  c10::DataPtr fresh;
  try {
    fresh = g_allocator.allocate(nbytes);
  } catch (...) {
    g_current_device = saved;
    throw;
  }
  g_current_device = saved;
  if (storage.nbytes() && storage.data()) {
    std::memcpy(fresh.get(), storage.data(), storage.nbytes());
  }
  auto* impl = storage.unsafeGetStorageImpl();
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(nbytes);
}

// ----------------------------------------------------------------------------------------------------------
// Device guard: current device, streams and events (all work is synchronous, so events time host work)
// ----------------------------------------------------------------------------------------------------------

static thread_local int64_t g_current_stream[kMaxDevices] = {0};
static std::atomic<int64_t> g_next_stream{1};

struct SimEvent {
  std::chrono::steady_clock::time_point when;
  bool recorded = false;
  bool timing = false;
};

struct NpuGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override {
    return kNpu;
  }
  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    if (d.has_index() && d.index() != old.index()) {
      setDevice(d);
    }
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kNpu, static_cast<c10::DeviceIndex>(g_current_device));
  }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kNpu, "expected an npu device, got ", d);
    if (d.has_index()) {
      check_index(d.index());
      g_current_device = d.index();
    }
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.has_index() && d.index() >= 0 && d.index() < g_device_count) {
      g_current_device = d.index();
    }
  }
  c10::Stream getStream(c10::Device d) const override {
    auto idx = d.has_index() ? d.index() : g_current_device;
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNpu, idx), g_current_stream[idx]);
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    auto idx = d.has_index() ? d.index() : g_current_device;
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNpu, idx), 0);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool /*high_priority*/) const override {
    return getNewStream(d, 0);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    auto idx = d.has_index() ? d.index() : g_current_device;
    check_index(idx);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kNpu, idx), g_next_stream.fetch_add(1));
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    auto idx = s.device_index();
    auto old = getStream(s.device());
    g_current_stream[idx] = s.id();
    return old;
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<SimEvent*>(event);
  }
  void record(void** event, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag flag) const override {
    if (*event == nullptr) {
      auto* e = new SimEvent();
      e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
      *event = e;
    }
    auto* e = static_cast<SimEvent*>(*event);
    e->when = std::chrono::steady_clock::now();
    e->recorded = true;
  }
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override {
    return true;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(g_device_count);
  }
  bool queryStream(const c10::Stream&) const override {
    return true;
  }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
  double elapsedTime(void* e1, void* e2, const c10::DeviceIndex) const override {
    TORCH_CHECK(e1 && e2, "Both events must be recorded before calculating elapsed time.");
    auto* a = static_cast<SimEvent*>(e1);
    auto* b = static_cast<SimEvent*>(e2);
    TORCH_CHECK(a->recorded && b->recorded, "Both events must be recorded before calculating elapsed time.");
    return std::chrono::duration<double, std::milli>(b->when - a->when).count();
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NpuGuardImpl);

// ----------------------------------------------------------------------------------------------------------
// Generators: one per device, shaped like torch_npu's (and CUDA's) Philox generators: the state is 16 bytes, a
// uint64 seed and a uint64 offset, and code that edits the offset (DTensor's RNG tracker, which asserts that
// shape) works. The numbers come from a CPU generator, which is what the CPU kernels accept: before each random
// op it is re-seeded from (seed, offset) and the offset advances, so the state fully determines the next op.
// A CPU generator state (what earlier versions saved) is still accepted by set_state.
// ----------------------------------------------------------------------------------------------------------

struct NpuGeneratorImpl final : c10::GeneratorImpl {
  static constexpr int64_t kStateBytes = 16;
  static constexpr uint64_t kOffsetStep = 4;  // as Philox: offsets advance in multiples of 4

  explicit NpuGeneratorImpl(c10::DeviceIndex idx, uint64_t seed = c10::default_rng_seed_val)
      : c10::GeneratorImpl(c10::Device(kNpu, idx), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
        inner(at::make_generator<at::CPUGeneratorImpl>(seed)),
        seed_(seed) {}
  void set_current_seed(uint64_t seed) override {
    seed_ = seed;
    offset_ = 0;
    from_cpu_state_ = false;
  }
  void set_offset(uint64_t offset) override {
    offset_ = offset;
    from_cpu_state_ = false;
  }
  uint64_t get_offset() const override {
    return offset_;
  }
  uint64_t current_seed() const override {
    return seed_;
  }
  uint64_t seed() override {
    set_current_seed(c10::detail::getNonDeterministicRandom(true));
    return seed_;
  }
  void set_state(const c10::TensorImpl& new_state) override {
    TORCH_CHECK_TYPE(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>(),
        "RNG state must be a torch.ByteTensor");
    if (new_state.numel() == kStateBytes) {
      auto* bytes = static_cast<const uint8_t*>(new_state.data());
      std::memcpy(&seed_, bytes, sizeof(uint64_t));
      std::memcpy(&offset_, bytes + sizeof(uint64_t), sizeof(uint64_t));
      from_cpu_state_ = false;
      return;
    }
    std::lock_guard<std::mutex> lk(inner.mutex());
    inner.unsafeGetGeneratorImpl()->set_state(new_state);  // a CPU state: its own size check and message
    from_cpu_state_ = true;
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    auto state = at::empty({kStateBytes}, at::TensorOptions().dtype(at::kByte));
    auto* bytes = state.data_ptr<uint8_t>();
    std::memcpy(bytes, &seed_, sizeof(uint64_t));
    std::memcpy(bytes + sizeof(uint64_t), &offset_, sizeof(uint64_t));
    return state.getIntrusivePtr();
  }
  NpuGeneratorImpl* clone_impl() const override {
    auto* g = new NpuGeneratorImpl(device_.index(), seed_);
    g->inner = inner.clone();
    g->offset_ = offset_;
    g->from_cpu_state_ = from_cpu_state_;
    return g;
  }
  // The CPU generator for the next random op: positioned at (seed, offset), then the offset moves on.
  at::Generator next_op() {
    std::lock_guard<std::mutex> lk(mutex_);
    if (!from_cpu_state_) {
      std::lock_guard<std::mutex> ilk(inner.mutex());
      // splitmix64 of (seed, offset): distinct, well-mixed mt19937 seeds for neighbouring offsets.
      uint64_t z = seed_ + 0x9E3779B97F4A7C15ULL * (offset_ / kOffsetStep + 1);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      inner.set_current_seed(z ^ (z >> 31));
      offset_ += kOffsetStep;
    }
    return inner;
  }
  at::Generator inner;

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
  bool from_cpu_state_ = false;  // set_state() was given a CPU state: draw from it as it stands
};

static std::vector<at::Generator>& default_generators() {
  // Never destroyed (see g_pinned): Python's torch.Generator objects share these and may outlive static destruction.
  static auto* gens = [] {
    auto* v = new std::vector<at::Generator>();
    for (int i = 0; i < kMaxDevices; ++i) {
      v->push_back(at::make_generator<NpuGeneratorImpl>(static_cast<c10::DeviceIndex>(i)));
    }
    return v;
  }();
  return *gens;
}

static at::Generator cpu_generator_for(const c10::IValue& value, int dev) {
  if (value.isNone()) {
    return static_cast<NpuGeneratorImpl*>(default_generators()[dev].unsafeGetGeneratorImpl())->next_op();
  }
  auto gen = value.toGenerator();
  TORCH_CHECK(
      gen.device().type() == kNpu, "Expected a 'npu' device type for generator but found '", gen.device().type(), "'");
  return static_cast<NpuGeneratorImpl*>(gen.unsafeGetGeneratorImpl())->next_op();
}

// ----------------------------------------------------------------------------------------------------------
// Hooks
// ----------------------------------------------------------------------------------------------------------

struct NpuHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override {
    return true;
  }
  bool isAvailable() const override {
    return true;
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex idx) const override {
    if (idx < 0) {
      idx = static_cast<c10::DeviceIndex>(g_current_device);
    }
    check_index(idx);
    return default_generators()[idx];
  }
  at::Generator getNewGenerator(c10::DeviceIndex idx) const override {
    if (idx < 0) {
      idx = static_cast<c10::DeviceIndex>(g_current_device);
    }
    check_index(idx);
    return at::make_generator<NpuGeneratorImpl>(idx);
  }
  at::Device getDeviceFromPtr(void*) const override {
    return c10::Device(kNpu, static_cast<c10::DeviceIndex>(g_current_device));
  }
  bool isPinnedPtr(const void* data) const override {
    std::lock_guard<std::mutex> lk(g_pinned_mu);
    return g_pinned.count(data) > 0;
  }
  c10::Allocator* getPinnedMemoryAllocator() const override {
    return &g_pinned_allocator;
  }
  bool hasPrimaryContext(c10::DeviceIndex) const override {
    return true;
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    if (newsize > storage.nbytes()) {
      grow_storage(storage, newsize);
    } else {
      storage.unsafeGetStorageImpl()->set_nbytes(newsize);
    }
  }
};

static bool register_hooks() {
  at::RegisterPrivateUse1HooksInterface(new NpuHooks());
  return true;
}
static bool g_hooks_registered = register_hooks();

// ----------------------------------------------------------------------------------------------------------
// Zero-copy conversions between npu tensors and CPU tensors
// ----------------------------------------------------------------------------------------------------------

static void release_storage_ref(void* ctx) {
  delete static_cast<c10::Storage*>(ctx);
}

// A CPU tensor viewing the npu tensor's memory. It keeps the npu storage alive; a CPU kernel that resizes it
// gets fresh CPU memory (the caller notices and copies back).
static at::Tensor cpu_alias(const at::Tensor& t) {
  const auto& st = t.storage();
  c10::DataPtr ptr(st.mutable_data(), new c10::Storage(st), &release_storage_ref, c10::Device(c10::DeviceType::CPU));
  c10::Storage cpu_storage(
      c10::Storage::use_byte_size_t(), st.nbytes(), std::move(ptr), c10::GetCPUAllocator(), /*resizable=*/true);
  auto out = at::detail::make_tensor<c10::TensorImpl>(
      std::move(cpu_storage), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  if (t.is_conj()) {
    out._set_conj(true);
  }
  if (t.is_neg()) {
    out._set_neg(true);
  }
  return out;
}

static at::Tensor make_npu_on_storage(
    c10::Storage storage, const at::Tensor& like, bool is_view, bool inference_base = false) {
  // The VIEW constructor takes the key set as given: without the autograd keys the view would be an inference
  // tensor, and autograd's view tracking then fails ("Cannot set version_counter for inference tensor":
  // complex .real/.imag, view_as_real). As in torch, a view is an inference tensor only when its base is one.
  c10::DispatchKeySet view_keys(c10::DispatchKey::PrivateUse1);
  if (!inference_base) {
    view_keys = view_keys | c10::getAutogradRelatedKeySetFromBackend(c10::BackendComponent::PrivateUse1Bit);
  }
  auto out = is_view ? at::detail::make_tensor<c10::TensorImpl>(
                           c10::TensorImpl::VIEW, std::move(storage), view_keys, like.dtype())
                     : at::detail::make_tensor<c10::TensorImpl>(
                           std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), like.dtype());
  out.unsafeGetTensorImpl()->set_sizes_and_strides(like.sizes(), like.strides(), like.storage_offset());
  if (like.is_conj()) {
    out._set_conj(true);
  }
  if (like.is_neg()) {
    out._set_neg(true);
  }
  return out;
}

// Re-home a CPU kernel's fresh output on the npu device without copying.
static at::Tensor wrap_output(const at::Tensor& cpu, int dev) {
  check_dtype(cpu.dtype());
  c10::Storage st = cpu.storage();
  int64_t nbytes = static_cast<int64_t>(st.nbytes());
  account_alloc(dev, nbytes);
  void* data = st.mutable_data();
  auto* ctx = new BorrowedBlock{std::move(st), nbytes, dev};
  c10::DataPtr ptr(data, ctx, &delete_borrowed, c10::Device(kNpu, static_cast<c10::DeviceIndex>(dev)));
  c10::Storage npu_storage(c10::Storage::use_byte_size_t(), nbytes, std::move(ptr), &g_allocator, true);
  return make_npu_on_storage(std::move(npu_storage), cpu, false);
}

// ----------------------------------------------------------------------------------------------------------
// Simulated unsupported ops and float64 policy
// ----------------------------------------------------------------------------------------------------------

static std::shared_mutex& g_cfg_mu = *new std::shared_mutex;
static std::unordered_set<std::string>& g_unsupported = *new std::unordered_set<std::string>;
static std::atomic<int64_t> g_cfg_version{1};
static std::unordered_map<std::string, int64_t>& g_fallback_counts = *new std::unordered_map<std::string, int64_t>;
static std::unordered_set<std::string>& g_warned = *new std::unordered_set<std::string>;
static py::object* g_fallback_hook = nullptr;  // leaked on purpose: must outlive interpreter teardown order

struct OpInfo {
  std::string name;  // "aten::add.Tensor"
  bool mixed_device_ok = false;
  std::vector<int> generator_args;
  // For each return: index of the argument it writes into (in-place / out=), or -1.
  std::vector<int> write_alias_arg;
  int64_t cfg_version = 0;
  bool unsupported = false;
  // The simulator's own host kernel: 0 none, 1 cos, 2 sin, 3 add (npu_fastmath.cpp), 4 mm, 5 bmm, 6 addmm
  // (npu_blas.cpp); and the overload's shape.
  int fast_op = 0;
  enum Variant { kFunctional, kOut, kInPlace } fast_variant = kFunctional;
};

static std::shared_mutex& g_ops_mu = *new std::shared_mutex;
static std::unordered_map<const c10::FunctionSchema*, OpInfo*>& g_ops =
    *new std::unordered_map<const c10::FunctionSchema*, OpInfo*>;

static OpInfo* op_info(const c10::OperatorHandle& op) {
  const auto* key = &op.schema();
  {
    std::shared_lock<std::shared_mutex> lk(g_ops_mu);
    auto it = g_ops.find(key);
    if (it != g_ops.end()) {
      return it->second;
    }
  }
  auto* info = new OpInfo();
  const auto& schema = op.schema();
  info->name = schema.name();
  if (!schema.overload_name().empty()) {
    info->name += "." + schema.overload_name();
  }
  // CUDA accepts CPU index tensors (x_cuda[cpu_idx]); mirror that for the npu.
  static const std::unordered_set<std::string> mixed_ok = {
      "aten::index", "aten::index_put_", "aten::_index_put_impl_", "aten::index_put", "aten::_copy_from",
      "aten::_copy_from_and_resize"};
  info->mixed_device_ok = mixed_ok.count(schema.name()) > 0;
  const std::string& base_name = schema.name();
  const std::string& overload = schema.overload_name();
  if ((base_name == "aten::cos" || base_name == "aten::sin") && (overload.empty() || overload == "out")) {
    info->fast_op = base_name == "aten::cos" ? 1 : 2;
    info->fast_variant = overload.empty() ? OpInfo::kFunctional : OpInfo::kOut;
  } else if ((base_name == "aten::cos_" || base_name == "aten::sin_") && overload.empty()) {
    info->fast_op = base_name == "aten::cos_" ? 1 : 2;
    info->fast_variant = OpInfo::kInPlace;
  } else if ((base_name == "aten::add" && (overload == "Tensor" || overload == "out")) ||
             (base_name == "aten::add_" && overload == "Tensor")) {
    info->fast_op = 3;
    info->fast_variant = base_name == "aten::add_" ? OpInfo::kInPlace
        : overload == "out"                        ? OpInfo::kOut
                                                   : OpInfo::kFunctional;
  } else if ((base_name == "aten::mm" || base_name == "aten::bmm" || base_name == "aten::addmm") &&
             (overload.empty() || overload == "out")) {
    info->fast_op = base_name == "aten::mm" ? 4 : base_name == "aten::bmm" ? 5 : 6;
    info->fast_variant = overload.empty() ? OpInfo::kFunctional : OpInfo::kOut;
  } else if (base_name == "aten::addmm_" && overload.empty()) {
    info->fast_op = 6;
    info->fast_variant = OpInfo::kInPlace;
  }
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].type()->str() == "Generator?") {
      info->generator_args.push_back(static_cast<int>(i));
    }
  }
  for (const auto& ret : schema.returns()) {
    int found = -1;
    if (ret.alias_info() && ret.alias_info()->isWrite()) {
      for (size_t i = 0; i < args.size(); ++i) {
        const auto* a = args[i].alias_info();
        if (a && a->isWrite() && a->beforeSets() == ret.alias_info()->beforeSets()) {
          found = static_cast<int>(i);
          break;
        }
      }
    }
    info->write_alias_arg.push_back(found);
  }
  std::unique_lock<std::shared_mutex> lk(g_ops_mu);
  auto it = g_ops.find(key);
  if (it != g_ops.end()) {
    delete info;
    return it->second;
  }
  g_ops[key] = info;
  return info;
}

static bool python_usable() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

static void note_unsupported(OpInfo* info) {
  bool first = false;
  {
    std::unique_lock<std::shared_mutex> lk(g_cfg_mu);
    g_fallback_counts[info->name] += 1;
    first = g_warned.insert(info->name).second;
  }
  if (first) {
    // torch_npu's own wording, so that log scrapers and the doctor's fallback monitor see what they would see.
    TORCH_WARN(
        "CAUTION: The operator '", info->name,
        "' is not currently supported on the NPU backend and will fall back to run on the CPU. This may have "
        "performance implications. [simulated]");
  }
  // The hook is Python: never take the GIL in a finalizing interpreter (the thread would be ended inside a
  // noexcept frame and the process abort); the monitor has nobody left to tell by then.
  if (g_fallback_hook != nullptr && python_usable()) {
    py::gil_scoped_acquire gil;
    if (g_fallback_hook != nullptr && !g_fallback_hook->is_none()) {
      (*g_fallback_hook)(info->name);
    }
  }
}

static void apply_float64_policy(OpInfo* info) {
  int policy = g_float64_policy.load(std::memory_order_relaxed);
  if (policy == 2) {
    TORCH_CHECK(
        false, "torch.float64 is not supported by the NPU operator ", info->name, " on ", g_chip,
        " (float64 policy 'error'); cast to torch.float32");
  }
  bool first;
  {
    std::unique_lock<std::shared_mutex> lk(g_cfg_mu);
    first = g_warned.insert("float64:" + info->name).second;
  }
  if (first) {
    TORCH_WARN(
        "torch.float64 used by ", info->name, " on the NPU: float64 runs slowly (AI CPU) or not at all on ", g_chip,
        "; prefer torch.float32 [simulated]");
  }
}

// ----------------------------------------------------------------------------------------------------------
// The boxed fallback
// ----------------------------------------------------------------------------------------------------------

struct DeviceCheck {
  int npu_index = -1;  // first npu device seen
  bool saw_double = false;
  const char* other = nullptr;
  std::string other_dev;

  void see(const at::Tensor& t, bool mixed_ok) {
    if (!t.defined()) {
      return;
    }
    auto d = t.device();
    if (d.type() == kNpu) {
      if (t.scalar_type() == at::kDouble) {
        saw_double = true;
      }
      if (npu_index < 0) {
        npu_index = d.index();
      } else if (d.index() != npu_index && !mixed_ok) {
        other_dev = d.str();
      }
    } else if (!mixed_ok && t.dim() > 0 && other_dev.empty()) {
      // 0-dim CPU tensors mix with device tensors in PyTorch; anything larger does not.
      other_dev = d.str();
    }
  }
};

// The simulator's own host kernels (npu_fastmath.cpp) take contiguous float32 npu tensors.
static bool fast_operand(const at::Tensor& t) {
  return t.device().type() == kNpu && t.layout() == c10::kStrided && t.scalar_type() == at::kFloat && !t.is_neg() &&
      t.is_contiguous();
}

// Where a fast op writes: a new tensor of `sizes` like `like`, `self` (in place), or the out= argument (always the
// last one) resized as torch's out= kernels resize it (warning when it had elements). Undefined where torch's
// kernel must run instead: an out= of another dtype, device or layout, or one that would not be contiguous, an
// in-place `self` of another shape, or a result overlapping an input (other than element for element where
// `full_ok`). Everything is decided before the out= is resized: a declined op leaves it as it was.
static at::Tensor fast_result(
    const OpInfo* info, torch::jit::Stack* stack, size_t base, size_t num_args, const at::Tensor& like,
    c10::IntArrayRef sizes, std::initializer_list<const at::Tensor*> inputs, bool full_ok) {
  if (info->fast_variant == OpInfo::kFunctional) {
    return at::empty(sizes, like.options());
  }
  const auto& out_iv = (*stack)[base + (info->fast_variant == OpInfo::kInPlace ? 0 : num_args - 1)];
  if (!out_iv.isTensor()) {
    return {};
  }
  const at::Tensor& out = out_iv.toTensor();
  if (out.device() != like.device() || out.layout() != c10::kStrided || out.scalar_type() != like.scalar_type() ||
      out.is_neg() || out.is_conj()) {
    return {};
  }
  const bool resize = !out.sizes().equals(sizes);
  if (resize && info->fast_variant == OpInfo::kInPlace) {
    return {};
  }
  if (!resize && !out.is_contiguous()) {
    return {};  // (a resized out= is contiguous: resize_ gives new sizes contiguous strides)
  }
  for (const at::Tensor* in : inputs) {
    if (in == nullptr) {
      continue;
    }
    if (resize) {
      if (in->is_alias_of(out)) {  // where the resized result will lie is not known yet
        return {};
      }
      continue;
    }
    auto overlap = at::get_overlap_status(*in, out);
    if (overlap != at::MemOverlapStatus::No && !(full_ok && overlap == at::MemOverlapStatus::Full)) {
      return {};
    }
  }
  if (resize) {
    at::native::resize_output(out, sizes);
  }
  return out;
}

static bool is_one(const c10::IValue& v) {
  return v.isInt() ? v.toInt() == 1 : v.isDouble() && v.toDouble() == 1.0;
}

// cos/sin of any size, and adds (alpha 1, equal shapes) large enough for streaming stores, by the simulator's own
// kernels. False leaves the op to torch's CPU kernel (other dtypes, strides, broadcasting, hosts without them).
static bool try_fast_op(const OpInfo* info, torch::jit::Stack* stack, size_t base, size_t num_args) {
  const auto& self_iv = (*stack)[base];
  if (!self_iv.isTensor() || !fastmath::available() || !fast_operand(self_iv.toTensor())) {
    return false;
  }
  const at::Tensor& self = self_iv.toTensor();
  const at::Tensor* other = nullptr;
  if (info->fast_op == 3) {
    const auto& other_iv = (*stack)[base + 1];
    if (!other_iv.isTensor() || !fast_operand(other_iv.toTensor()) || !is_one((*stack)[base + 2]) ||
        !other_iv.toTensor().sizes().equals(self.sizes()) ||
        self.numel() * static_cast<int64_t>(sizeof(float)) < fastmath::kStreamMinBytes) {
      return false;
    }
    other = &other_iv.toTensor();
  }
  at::Tensor out = fast_result(info, stack, base, num_args, self, self.sizes(), {&self, other}, true);
  if (!out.defined()) {
    return false;
  }
  const float* in = self.const_data_ptr<float>();
  const float* in2 = other != nullptr ? other->const_data_ptr<float>() : nullptr;
  float* dst = out.mutable_data_ptr<float>();
  const int op = info->fast_op;
  at::parallel_for(0, self.numel(), at::internal::GRAIN_SIZE, [&](int64_t begin, int64_t end) {
    if (op == 3) {
      fastmath::add_stream(in + begin, in2 + begin, dst + begin, end - begin);
    } else {
      fastmath::sin_cos(in + begin, dst + begin, end - begin, op == 2);
    }
  });
  torch::jit::drop(*stack, num_args);
  torch::jit::push(*stack, std::move(out));
  return true;
}

// The scalar value of a beta=/alpha= argument (false for complex or missing values).
static bool real_scalar(const c10::IValue& v, double& out) {
  if (v.isDouble() || v.isInt() || v.isBool()) {
    out = v.toScalar().toDouble();
    return true;
  }
  return false;
}

// A matrix operand the host BLAS takes: an npu tensor of `dtype` with `dims` dimensions.
static bool blas_tensor(const c10::IValue& iv, int64_t dims, at::ScalarType dtype) {
  if (!iv.isTensor()) {
    return false;
  }
  const at::Tensor& t = iv.toTensor();
  return t.device().type() == kNpu && t.layout() == c10::kStrided && t.scalar_type() == dtype && !t.is_neg() &&
      t.dim() == dims;
}

// mm, bmm and addmm (and their out= / in-place forms) of large float32/float64 matrices by the host BLAS
// (npu_blas.cpp). False leaves the op to torch's CPU kernel: small products, other dtypes, strides BLAS cannot
// take, mismatched shapes (torch's kernel raises its own error), or no host BLAS.
static bool try_blas_op(const OpInfo* info, torch::jit::Stack* stack, size_t base, size_t num_args) {
  const bool addmm = info->fast_op == 6, batched = info->fast_op == 5;
  const size_t first = addmm ? 1 : 0;  // addmm(self, mat1, mat2, *, beta, alpha)
  const auto& a_iv = (*stack)[base + first];
  if (!a_iv.isTensor() || !hostblas::enabled()) {
    return false;
  }
  const at::Tensor& a = a_iv.toTensor();
  const at::ScalarType dtype = a.scalar_type();
  const int64_t dims = batched ? 3 : 2;
  if ((dtype != at::kFloat && dtype != at::kDouble) || !hostblas::available(static_cast<int>(a.element_size())) ||
      !blas_tensor(a_iv, dims, dtype) || !blas_tensor((*stack)[base + first + 1], dims, dtype)) {
    return false;
  }
  const at::Tensor& b = (*stack)[base + first + 1].toTensor();
  const int64_t batch = batched ? a.size(0) : 1;
  const int64_t m = a.size(dims - 2), k = a.size(dims - 1), n = b.size(dims - 1);
  if (b.size(dims - 2) != k || (batched && b.size(0) != batch) ||
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <
          static_cast<double>(hostblas::kMinMacs)) {
    return false;
  }
  hostblas::Operand oa, ob;
  if (!hostblas::operand(m, k, a.stride(dims - 2), a.stride(dims - 1), oa) ||
      !hostblas::operand(k, n, b.stride(dims - 2), b.stride(dims - 1), ob) ||
      !hostblas::fits32({m, n, k, oa.ld, ob.ld})) {
    return false;
  }
  if (ob.trans == hostblas::kTrans &&
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <
          static_cast<double>(hostblas::kMinMacsTransB)) {
    return false;
  }
  double alpha = 1.0, beta = 0.0;
  const at::Tensor* self = nullptr;
  if (addmm) {
    if (!real_scalar((*stack)[base + 3], beta) || !real_scalar((*stack)[base + 4], alpha) ||
        !(*stack)[base].isTensor()) {
      return false;
    }
    self = &(*stack)[base].toTensor();
    if (self->device() != a.device() || self->layout() != c10::kStrided || self->scalar_type() != dtype ||
        self->is_neg() || self->dim() > 2 || !at::is_expandable_to(self->sizes(), {m, n})) {
      return false;
    }
  }
  const bool in_place = info->fast_variant == OpInfo::kInPlace;
  c10::SmallVector<int64_t, 3> sizes;
  if (batched) {
    sizes.push_back(batch);
  }
  sizes.append({m, n});
  at::Tensor out = fast_result(info, stack, base, num_args, a, sizes, {&a, &b, in_place ? nullptr : self}, false);
  if (!out.defined()) {
    return false;
  }
  if (self != nullptr && !in_place && beta != 0.0) {  // beta == 0: self is ignored (nan and inf too), as torch
    cpu_alias(out).copy_(cpu_alias(*self).expand({m, n}));
  }
  const int threads = at::get_num_threads();
  const int64_t sa = batched ? a.stride(0) : 0, sb = batched ? b.stride(0) : 0, sc = batched ? m * n : 0;
  if (dtype == at::kFloat) {
    hostblas::gemm<float>(batch, m, n, k, static_cast<float>(alpha), a.const_data_ptr<float>(), sa, oa,
                          b.const_data_ptr<float>(), sb, ob, static_cast<float>(beta), out.mutable_data_ptr<float>(),
                          sc, n, threads);
  } else {
    hostblas::gemm<double>(batch, m, n, k, alpha, a.const_data_ptr<double>(), sa, oa, b.const_data_ptr<double>(), sb,
                           ob, beta, out.mutable_data_ptr<double>(), sc, n, threads);
  }
  torch::jit::drop(*stack, num_args);
  torch::jit::push(*stack, std::move(out));
  return true;
}

static void npu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  OpInfo* info = op_info(op);
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t base = stack->size() - num_args;

  // Pass 1: devices and dtypes.
  DeviceCheck check;
  for (size_t i = 0; i < num_args; ++i) {
    auto& iv = (*stack)[base + i];
    if (iv.isTensor()) {
      check.see(iv.toTensor(), info->mixed_device_ok);
    } else if (iv.isTensorList()) {
      auto list = iv.toTensorList();
      for (size_t k = 0; k < list.size(); ++k) {
        check.see(list.get(k), info->mixed_device_ok);
      }
    } else if (iv.isOptionalTensorList()) {
      for (const auto& ot : iv.toOptionalTensorList()) {
        std::optional<at::Tensor> t = ot;
        if (t.has_value()) {
          check.see(*t, info->mixed_device_ok);
        }
      }
    }
  }
  int dev = check.npu_index;
  if (dev < 0) {
    // Factory-like op: the device comes from a Device argument or the current device.
    dev = g_current_device;
    for (size_t i = 0; i < num_args; ++i) {
      auto& iv = (*stack)[base + i];
      if (iv.isDevice() && iv.toDevice().type() == kNpu && iv.toDevice().has_index()) {
        check_index(iv.toDevice().index());
        dev = iv.toDevice().index();
      }
    }
  }
  if (!check.other_dev.empty()) {
    TORCH_CHECK(
        false, "Expected all tensors to be on the same device, but found at least two devices, npu:", dev, " and ",
        check.other_dev, "! (when checking arguments for ", info->name, ")");
  }
  if (info->cfg_version != g_cfg_version.load(std::memory_order_acquire)) {
    std::shared_lock<std::shared_mutex> lk(g_cfg_mu);
    info->unsupported = g_unsupported.count(info->name) > 0;
    info->cfg_version = g_cfg_version.load();
  }
  if (info->unsupported) {
    note_unsupported(info);
  }
  if (check.saw_double && g_float64_policy.load(std::memory_order_relaxed) != 0) {
    apply_float64_policy(info);
  }
  if (info->fast_op != 0 &&
      (info->fast_op >= 4 ? try_blas_op(info, stack, base, num_args) : try_fast_op(info, stack, base, num_args))) {
    return;
  }

  // Pass 2: replace npu tensors by CPU aliases; remember them to detect aliasing outputs.
  struct Alias {
    c10::StorageImpl* cpu_storage;
    at::Tensor npu;
    at::Tensor cpu;
  };
  c10::SmallVector<Alias, 8> aliases;
  auto to_cpu = [&](const at::Tensor& t) -> at::Tensor {
    if (!t.defined() || t.device().type() != kNpu) {
      return t;
    }
    auto c = cpu_alias(t);
    aliases.push_back({c.storage().unsafeGetStorageImpl(), t, c});
    return c;
  };
  std::vector<at::Tensor> arg_npu(num_args);  // original npu tensor per Tensor argument (for write aliases)
  for (size_t i = 0; i < num_args; ++i) {
    auto& iv = (*stack)[base + i];
    if (iv.isTensor()) {
      const auto& t = iv.toTensor();
      if (t.defined() && t.device().type() == kNpu) {
        arg_npu[i] = t;
        iv = to_cpu(t);
      }
    } else if (iv.isTensorList()) {
      auto list = iv.toTensorList();
      bool any = false;
      for (size_t k = 0; k < list.size(); ++k) {
        at::Tensor t = list.get(k);
        any = any || (t.defined() && t.device().type() == kNpu);
      }
      if (any) {
        c10::List<at::Tensor> converted;
        converted.reserve(list.size());
        for (size_t k = 0; k < list.size(); ++k) {
          converted.push_back(to_cpu(list.get(k)));
        }
        iv = converted;
      }
    } else if (iv.isOptionalTensorList()) {
      auto list = iv.toOptionalTensorList();
      c10::List<std::optional<at::Tensor>> converted;
      for (const auto& ot : list) {
        std::optional<at::Tensor> t = ot;
        converted.push_back(t.has_value() ? std::optional<at::Tensor>(to_cpu(*t)) : std::nullopt);
      }
      iv = converted;
    } else if (iv.isDevice() && iv.toDevice().type() == kNpu) {
      iv = c10::Device(c10::DeviceType::CPU);
    }
  }
  for (int gi : info->generator_args) {
    auto& iv = (*stack)[base + gi];
    iv = cpu_generator_for(iv, dev);
  }

  {
    FallbackDeviceScope scope(dev);
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  }

  // A CPU kernel may have resized an out= tensor into fresh CPU memory: carry that back to the npu tensor.
  for (auto& a : aliases) {
    if (a.cpu.storage().unsafeGetStorageImpl() != a.cpu_storage) {
      continue;
    }
    bool moved = a.cpu.storage().data() != a.npu.storage().data();
    bool reshaped = !a.cpu.sizes().equals(a.npu.sizes()) || !a.cpu.strides().equals(a.npu.strides()) ||
        a.cpu.storage_offset() != a.npu.storage_offset();
    if (moved || reshaped) {
      if (moved) {
        grow_storage(a.npu.storage(), a.cpu.storage().nbytes());
        std::memcpy(a.npu.storage().mutable_data(), a.cpu.storage().data(), a.cpu.storage().nbytes());
      }
      a.npu.unsafeGetTensorImpl()->set_sizes_and_strides(a.cpu.sizes(), a.cpu.strides(), a.cpu.storage_offset());
    }
  }

  // Returns.
  const size_t num_returns = schema.returns().size();
  const size_t rbase = stack->size() - num_returns;
  auto rehome = [&](const at::Tensor& t) -> at::Tensor {
    if (!t.defined() || t.device().type() != c10::DeviceType::CPU || t.layout() != c10::kStrided) {
      return t;
    }
    auto* impl = t.storage().unsafeGetStorageImpl();
    for (auto& a : aliases) {
      if (a.cpu_storage == impl) {
        return make_npu_on_storage(a.npu.storage(), t, true, a.npu.is_inference());
      }
    }
    return wrap_output(t, dev);
  };
  for (size_t r = 0; r < num_returns; ++r) {
    auto& iv = (*stack)[rbase + r];
    int w = info->write_alias_arg[r];
    if (w >= 0 && arg_npu[w].defined()) {
      iv = arg_npu[w];
    } else if (iv.isTensor()) {
      iv = rehome(iv.toTensor());
    } else if (iv.isTensorList()) {
      auto list = iv.toTensorList();
      c10::List<at::Tensor> converted;
      converted.reserve(list.size());
      for (size_t k = 0; k < list.size(); ++k) {
        converted.push_back(rehome(list.get(k)));
      }
      iv = converted;
    }
  }
}

// ----------------------------------------------------------------------------------------------------------
// Kernels registered directly on PrivateUse1
// ----------------------------------------------------------------------------------------------------------

static at::Tensor npu_empty(
    c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
    std::optional<at::Device> device, std::optional<bool> pin_memory,
    std::optional<at::MemoryFormat> memory_format) {
  auto idx = device_index_or_current(device);
  auto st = c10::dtype_or_default(dtype);
  check_dtype(c10::scalarTypeToTypeMeta(st));
  int saved = g_current_device;
  g_current_device = idx;
  try {
    auto out = at::detail::empty_generic(
        size, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st, memory_format);
    g_current_device = saved;
    return out;
  } catch (...) {
    g_current_device = saved;
    throw;
  }
}

static at::Tensor npu_empty_strided(
    c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
    std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool> pin_memory) {
  auto idx = device_index_or_current(device);
  auto st = c10::dtype_or_default(dtype);
  check_dtype(c10::scalarTypeToTypeMeta(st));
  int saved = g_current_device;
  g_current_device = idx;
  try {
    auto out = at::detail::empty_strided_generic(
        size, stride, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st);
    g_current_device = saved;
    return out;
  } catch (...) {
    g_current_device = saved;
    throw;
  }
}

static at::Tensor as_cpu(const at::Tensor& t) {
  return t.device().type() == kNpu ? cpu_alias(t) : t;
}

static at::Tensor npu_copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  // Both sides are host memory, so every direction (cpu<->npu, npu<->npu across devices) is a host copy.
  auto d = as_cpu(dst);
  d.copy_(as_cpu(self));
  return dst;
}

static at::Tensor npu_copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (!dst.sizes().equals(self.sizes())) {
    dst.resize_(self.sizes());
  }
  return npu_copy_from(self, dst, false);
}

static const at::Tensor& npu_resize_(
    const at::Tensor& self, c10::IntArrayRef size, std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (memory_format.has_value() && *memory_format != at::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  size_t needed = at::detail::computeStorageNbytes(
      self.sizes(), self.strides(), self.dtype().itemsize(), self.storage_offset());
  grow_storage(self.storage(), needed);
  return self;
}

static at::Tensor& npu_set_storage(at::Tensor& self, c10::Storage source) {
  auto* impl = self.unsafeGetTensorImpl();
  int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  impl->set_storage_keep_dtype(std::move(source));
  impl->set_sizes_contiguous({numel});
  impl->set_storage_offset(0);
  return self;
}

static at::Tensor& npu_set_storage_offset(
    at::Tensor& self, c10::Storage source, c10::SymInt offset, c10::SymIntArrayRef size,
    c10::SymIntArrayRef stride) {
  auto* impl = self.unsafeGetTensorImpl();
  if (!impl->storage().is_alias_of(source)) {
    impl->set_storage_keep_dtype(std::move(source));
  }
  impl->set_sizes_and_strides(
      c10::asIntArrayRefUnchecked(size), c10::asIntArrayRefUnchecked(stride), offset.expect_int());
  size_t needed = at::detail::computeStorageNbytes(
      self.sizes(), self.strides(), self.dtype().itemsize(), self.storage_offset());
  TORCH_CHECK(
      needed <= self.storage().nbytes() || self.numel() == 0,
      "setStorage: sizes, strides and offset need ", needed, " bytes, out of bounds for storage of size ",
      self.storage().nbytes());
  return self;
}

static at::Tensor& npu_set_tensor(at::Tensor& self, const at::Tensor& src) {
  if (!self.is_same(src)) {
    return npu_set_storage_offset(
        self, src.storage(), src.sym_storage_offset(), src.sym_sizes(), src.sym_strides());
  }
  return self;
}

static at::Tensor& npu_set_empty(at::Tensor& self) {
  c10::Storage st(c10::Storage::use_byte_size_t(), 0, g_allocator.allocate(0), &g_allocator, true);
  return npu_set_storage(self, std::move(st));
}

static at::Tensor npu_view(const at::Tensor& self, c10::IntArrayRef size) {
  return at::native::view(self, size);
}

static at::Tensor npu_as_strided(
    const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<int64_t> offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, offset);
}

static at::Tensor npu_reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

// As torch_npu (torch_npu/csrc/aten/ops/HasCompatibleShallowCopyType.cpp): CPU and npu tensors can share a
// TensorImpl, so Module.to("npu") swaps param.data in place and keeps the Parameter objects; an optimizer built
// on the CPU model still holds the module's parameters afterwards, as on CUDA. Registered for PrivateUse1 (a
// call with an npu argument dispatches here) rather than torch_npu's CatchAll, which would override torch's
// own kernel with a warning at every install.
static bool npu_has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto is_dense = [](c10::DispatchKeySet ks) {
    return ks.has(c10::DispatchKey::CPU) || ks.has(c10::DispatchKey::PrivateUse1);
  };
  return self.key_set() == from.key_set() || (is_dense(self.key_set()) && is_dense(from.key_set()));
}

// Tensor.record_stream: torch_npu's caching allocator then keeps the block until the stream's queued work is
// done. Every simulated kernel has finished when its call returns, so a freed block is never still in use: nothing
// to record. FSDP1 and DeepSpeed ZeRO-3 call it on every gathered parameter (without it, the fallback sent it to
// a CPU kernel that does not exist). A stream of another device type is refused, as torch_npu does.
static void npu_record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream: expected an npu stream for an npu tensor, got a stream of device ", stream.device());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("record_stream", npu_record_stream);
  m.impl("_has_compatible_shallow_copy_type", npu_has_compatible_shallow_copy_type);
  m.impl("empty.memory_format", npu_empty);
  m.impl("empty_strided", npu_empty_strided);
  m.impl("_copy_from", npu_copy_from);
  m.impl("_copy_from_and_resize", npu_copy_from_and_resize);
  m.impl("resize_", npu_resize_);
  m.impl("set_.source_Storage", npu_set_storage);
  m.impl("set_.source_Storage_storage_offset", npu_set_storage_offset);
  m.impl("set_.source_Tensor", npu_set_tensor);
  m.impl("set_", npu_set_empty);
  m.impl("view", npu_view);
  m.impl("as_strided", npu_as_strided);
  m.impl("_reshape_alias", npu_reshape_alias);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&npu_fallback>());
}

// A copy to or from an npu tensor with a conjugate or negative bit: npu_copy_from copies through CPU aliases that
// keep those bits, and the CPU copy resolves them. Torch's conjugate/negative fallback would instead materialise
// the source with clone(), whose copy_ calls _copy_from again: endless recursion (z.conj().resolve_conj()
// crashed). Only devices without a native copy kernel reach _copy_from; CPU and CUDA never do.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

#include "npu_sparse.cpp"  // one translation unit: npu_sparse.cpp is not compiled on its own

// ----------------------------------------------------------------------------------------------------------
// Autocast for the npu: the same op policy as CUDA autocast (lower precision for matmul-class ops, float32
// for softmax/norms/losses, promotion for mixed-input ops).
// ----------------------------------------------------------------------------------------------------------

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

}  // namespace sim

// The op lists below name ATen types unqualified, as inside ATen's own autocast registration.
namespace at {
namespace {

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define SIM_KERNEL_LOW(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define SIM_KERNEL_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define SIM_KERNEL_FP32_OPT(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define SIM_KERNEL_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(SIM_KERNEL_LOW)
  AT_FORALL_FP32(SIM_KERNEL_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(SIM_KERNEL_FP32_OPT)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(SIM_KERNEL_PROMOTE)
#undef SIM_KERNEL_LOW
#undef SIM_KERNEL_FP32
#undef SIM_KERNEL_FP32_OPT
#undef SIM_KERNEL_PROMOTE
}
}  // namespace
}  // namespace at

namespace sim {

// ----------------------------------------------------------------------------------------------------------
// Python bindings (private: ascend_compat.simulate wraps them)
// ----------------------------------------------------------------------------------------------------------

static void configure(int device_count, int64_t total_bytes, bool bf16, const std::string& chip) {
  TORCH_CHECK(device_count >= 1 && device_count <= kMaxDevices, "device_count must be in [1, ", kMaxDevices, "]");
  g_device_count = device_count;
  for (int i = 0; i < kMaxDevices; ++i) {
    g_stats[i].total.store(total_bytes);
  }
  g_bf16_supported.store(bf16);
  g_chip = chip;
  install_fallback_cpu_allocator();
}

static py::dict stats(int dev) {
  check_index(dev);
  auto& s = g_stats[dev];
  py::dict d;
  d["allocated"] = s.allocated.load();
  d["peak"] = s.peak.load();
  d["num_allocs"] = s.num_allocs.load();
  d["num_frees"] = s.num_frees.load();
  d["num_ooms"] = s.num_ooms.load();
  d["limit"] = s.limit.load();
  d["total"] = s.total.load();
  d["cached"] = g_cache.cached[dev].load();
  return d;
}

static void set_unsupported(const std::vector<std::string>& names) {
  std::unique_lock<std::shared_mutex> lk(g_cfg_mu);
  g_unsupported = std::unordered_set<std::string>(names.begin(), names.end());
  g_cfg_version.fetch_add(1);
}

static py::dict fallback_counts() {
  std::shared_lock<std::shared_mutex> lk(g_cfg_mu);
  py::dict d;
  for (const auto& kv : g_fallback_counts) {
    d[py::str(kv.first)] = kv.second;
  }
  return d;
}

static void reset_fallback_counts() {
  std::unique_lock<std::shared_mutex> lk(g_cfg_mu);
  g_fallback_counts.clear();
  g_warned.clear();
}

// Ops with both a CPU kernel and a composite kernel would take the composite decomposition on PrivateUse1 and
// differ from CPU in the last bits (layer_norm, ...). Route them to their CPU kernel through the fallback.
static void route_to_cpu(const std::vector<std::string>& names) {
  static auto* lib = new torch::Library(
      torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  static std::unordered_set<std::string> done;
  for (const auto& full : names) {
    std::string name = full.rfind("aten::", 0) == 0 ? full.substr(6) : full;
    if (done.insert(name).second) {
      lib->impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&npu_fallback>());
    }
  }
}

static void set_fallback_hook(py::object hook) {
  if (g_fallback_hook == nullptr) {
    g_fallback_hook = new py::object(py::none());
  }
  *g_fallback_hook = std::move(hook);
}

// autograd starts one worker thread per npu device at the process's first backward pass. Each thread takes the
// GIL once to create its Python thread state; one still starting when the interpreter finalizes is ended inside
// torch's code (pthread_exit through a noexcept frame: "terminate called without an active exception").
// Run one backward per device from a fresh native thread, with the GIL released, so that every worker has
// started and gone idle before install() returns. The tensors and the thread-local state involved are pure C++
// (no Python objects), so whichever thread drops the last reference to them never needs the GIL.
// Returns false when autograd's device threads were sized before the npu existed (a backward ran earlier).
static bool start_autograd_workers() {
  std::exception_ptr error;
  bool ready = true;
  {
    py::gil_scoped_release no_gil;
    std::thread warm([&] {
      try {
        for (int i = 0; i < g_device_count; ++i) {
          auto opts = at::TensorOptions().device(kNpu, static_cast<c10::DeviceIndex>(i));
          auto leaf = at::ones({1}, opts).requires_grad_(true);
          torch::autograd::backward({leaf.sum()});
        }
      } catch (const std::exception& e) {
        if (std::string(e.what()).find("device_ready_queues_") != std::string::npos) {
          ready = false;
        } else {
          error = std::current_exception();
        }
      }
    });
    warm.join();
  }
  if (error) {
    std::rethrow_exception(error);
  }
  return ready;
}

}  // namespace sim

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("configure", &sim::configure);
  m.def("device_count", [] { return sim::g_device_count; });
  m.def("current_device", [] { return sim::g_current_device; });
  m.def("set_device", [](int d) {
    sim::check_index(d);
    sim::g_current_device = d;
  });
  m.def("stats", &sim::stats);
  m.def("empty_cache", [](int d) {
    sim::check_index(d);
    sim::cache_release(d);
  });
  m.def("reset_peak", [](int d) {
    sim::check_index(d);
    sim::g_stats[d].peak.store(sim::g_stats[d].allocated.load());
  });
  m.def("reset_counters", [](int d) {
    sim::check_index(d);
    sim::g_stats[d].num_allocs.store(0);
    sim::g_stats[d].num_frees.store(0);
    sim::g_stats[d].num_ooms.store(0);
  });
  m.def("set_limit", [](int d, int64_t bytes) {
    sim::check_index(d);
    sim::g_stats[d].limit.store(bytes);
  });
  m.def("set_bf16_supported", [](bool v) { sim::g_bf16_supported.store(v); });
  m.def("set_float64_policy", [](int p) { sim::g_float64_policy.store(p); });
  m.def("set_unsupported_ops", &sim::set_unsupported);
  m.def("fallback_counts", &sim::fallback_counts);
  m.def("reset_fallback_counts", &sim::reset_fallback_counts);
  m.def("set_fallback_hook", &sim::set_fallback_hook);
  m.def("route_to_cpu", &sim::route_to_cpu);
  m.def("start_autograd_workers", &sim::start_autograd_workers);
  m.def("default_generator", [](int d) {
    sim::check_index(d);
    return sim::default_generators()[d];
  });
  m.def("set_host_blas", &sim::hostblas::set, py::arg("sgemm"), py::arg("dgemm"), py::arg("ilp64"),
        py::arg("get_threads"), py::arg("set_threads"));
  m.def("host_blas_products", [] { return sim::hostblas::g_products.load(std::memory_order_relaxed); });
  m.def("cpu_alias", [](const at::Tensor& t) {
    TORCH_CHECK(t.device().type() == sim::kNpu, "cpu_alias expects an npu tensor");
    return sim::cpu_alias(t);
  });
}
