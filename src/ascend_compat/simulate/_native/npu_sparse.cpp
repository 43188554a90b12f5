// Sparse COO tensors on the simulated npu. Not a translation unit of its own: npu_sim.cpp #includes it inside
// namespace sim (it uses that file's helpers), and _build.py hashes every file in this folder.
//
// As torch_npu does, the SparsePrivateUse1 dispatch key gets the device-independent COO kernels (construction,
// indices/values, nnz, dims, coalesced flag, resize). Every other sparse op falls back to the CPU with
// torch_npu's "not currently supported on the NPU backend" warning: its sparse npu arguments become SparseCPU
// tensors whose indices and values alias the npu memory (no copy), the op runs there, and its results are
// re-homed on the npu (sparse results keep their layout).

static bool is_npu_sparse(const at::Tensor& t) {
  return t.defined() && t.is_sparse() && t.device().type() == kNpu;
}

static at::Tensor make_coo(
    c10::DispatchKey key, const at::Tensor& like, const at::Tensor& indices, const at::Tensor& values) {
  auto out = at::detail::make_tensor<at::SparseTensorImpl>(c10::DispatchKeySet(key), values.dtype());
  auto* impl = at::sparse::get_sparse_impl(out);
  impl->raw_resize_(like.sparse_dim(), like.dense_dim(), like.sizes());
  impl->set_indices_and_values_unsafe(indices, values);
  impl->set_coalesced(like.is_coalesced());
  return out;
}

struct SparseCall {
  int dev = -1;
  // CPU storages made for npu memory, and the npu storages they stand for.
  c10::SmallVector<std::pair<c10::StorageImpl*, c10::Storage>, 8> aliases;

  at::Tensor dense_to_cpu(const at::Tensor& t) {
    if (!t.defined() || t.device().type() != kNpu) {
      return t;
    }
    if (dev < 0) {
      dev = t.device().index();
    }
    auto c = cpu_alias(t);
    aliases.emplace_back(c.storage().unsafeGetStorageImpl(), t.storage());
    return c;
  }

  at::Tensor to_cpu(const at::Tensor& t) {
    if (!is_npu_sparse(t)) {
      return dense_to_cpu(t);
    }
    auto* impl = at::sparse::get_sparse_impl(t);
    return make_coo(c10::DispatchKey::SparseCPU, t, dense_to_cpu(impl->indices()), dense_to_cpu(impl->values()));
  }

  at::Tensor dense_to_npu(const at::Tensor& t) {
    if (!t.defined() || t.device().type() != c10::DeviceType::CPU || t.layout() != c10::kStrided) {
      return t;
    }
    auto* impl = t.storage().unsafeGetStorageImpl();
    for (auto& a : aliases) {
      if (a.first == impl) {
        return make_npu_on_storage(a.second, t, true);
      }
    }
    return wrap_output(t, dev < 0 ? g_current_device : dev);
  }

  at::Tensor to_npu(const at::Tensor& t) {
    if (!t.defined() || !t.is_sparse() || t.device().type() != c10::DeviceType::CPU) {
      return dense_to_npu(t);
    }
    c10::DeviceGuard guard(c10::Device(kNpu, static_cast<c10::DeviceIndex>(dev < 0 ? g_current_device : dev)));
    auto* impl = at::sparse::get_sparse_impl(t);
    return make_coo(c10::DispatchKey::SparsePrivateUse1, t, dense_to_npu(impl->indices()), dense_to_npu(impl->values()));
  }

  // An in-place op changed the CPU stand-in of an npu argument: carry its new state back to the npu tensor.
  void write_back(const at::Tensor& npu, const at::Tensor& cpu) {
    if (npu.is_sparse() && cpu.is_sparse()) {
      auto* impl = at::sparse::get_sparse_impl(npu);
      auto* src = at::sparse::get_sparse_impl(cpu);
      c10::DeviceGuard guard(npu.device());
      impl->raw_resize_(cpu.sparse_dim(), cpu.dense_dim(), cpu.sizes());
      impl->set_indices_and_values_unsafe(dense_to_npu(src->indices()), dense_to_npu(src->values()));
      impl->set_coalesced(cpu.is_coalesced());
    } else if (!npu.is_sparse() && !cpu.is_sparse()) {
      bool same_memory = cpu.storage().data() == npu.storage().data();
      if (!same_memory) {
        grow_storage(npu.storage(), cpu.storage().nbytes());
        std::memcpy(npu.storage().mutable_data(), cpu.storage().data(), cpu.storage().nbytes());
      }
      npu.unsafeGetTensorImpl()->set_sizes_and_strides(cpu.sizes(), cpu.strides(), cpu.storage_offset());
    }
  }
};

static void npu_sparse_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  OpInfo* info = op_info(op);
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const size_t base = stack->size() - num_args;
  note_unsupported(info);

  SparseCall call;
  std::vector<at::Tensor> arg_npu(num_args);
  for (size_t i = 0; i < num_args; ++i) {
    auto& iv = (*stack)[base + i];
    if (iv.isTensor()) {
      const auto& t = iv.toTensor();
      if (t.defined() && t.device().type() == kNpu) {
        arg_npu[i] = t;
        iv = call.to_cpu(t);
      }
    } else if (iv.isTensorList()) {
      auto list = iv.toTensorList();
      c10::List<at::Tensor> converted;
      converted.reserve(list.size());
      for (size_t k = 0; k < list.size(); ++k) {
        converted.push_back(call.to_cpu(list.get(k)));
      }
      iv = converted;
    } else if (iv.isDevice() && iv.toDevice().type() == kNpu) {
      if (iv.toDevice().has_index()) {
        check_index(iv.toDevice().index());
        call.dev = iv.toDevice().index();
      }
      iv = c10::Device(c10::DeviceType::CPU);
    }
  }
  for (int gi : info->generator_args) {
    auto& iv = (*stack)[base + gi];
    iv = cpu_generator_for(iv, call.dev < 0 ? g_current_device : call.dev);
  }
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    op.callBoxed(stack);
  }
  const size_t num_returns = schema.returns().size();
  const size_t rbase = stack->size() - num_returns;
  for (size_t r = 0; r < num_returns; ++r) {
    auto& iv = (*stack)[rbase + r];
    int w = info->write_alias_arg[r];
    if (w >= 0 && arg_npu[w].defined() && iv.isTensor()) {
      call.write_back(arg_npu[w], iv.toTensor());
      iv = arg_npu[w];
    } else if (iv.isTensor()) {
      iv = call.to_npu(iv.toTensor());
    } else if (iv.isTensorList()) {
      auto list = iv.toTensorList();
      c10::List<at::Tensor> converted;
      converted.reserve(list.size());
      for (size_t k = 0; k < list.size(); ++k) {
        converted.push_back(call.to_npu(list.get(k)));
      }
      iv = converted;
    }
  }
}

// The factories run under a guard for their target device, as the generated SparseCUDA wrappers do: a sparse
// tensor takes the current device at construction and must match its values' device.
static c10::Device sparse_target(std::optional<at::Device> device, const at::Tensor* values) {
  if (values != nullptr && values->defined() && values->device().type() == kNpu) {
    return values->device();
  }
  return c10::Device(kNpu, device_index_or_current(device));
}

static at::Tensor npu_sparse_with_tensors(
    int64_t sparse_dim, int64_t dense_dim, c10::SymIntArrayRef size, const at::Tensor& indices,
    const at::Tensor& values, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
    std::optional<at::Device> device, std::optional<bool> pin_memory, std::optional<bool> is_coalesced) {
  c10::DeviceGuard guard(sparse_target(device, &values));
  return at::native::new_with_dims_and_tensor_sparse_symint(
      sparse_dim, dense_dim, size, indices, values, dtype, layout, device, pin_memory, is_coalesced);
}

static at::Tensor npu_sparse_with_dims(
    int64_t sparse_dim, int64_t dense_dim, c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
    std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool> pin_memory) {
  c10::DeviceGuard guard(sparse_target(device, nullptr));
  return at::native::new_with_dims_sparse(sparse_dim, dense_dim, size, dtype, layout, device, pin_memory);
}

static at::Tensor npu_sparse_empty(
    c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
    std::optional<at::Device> device, std::optional<bool> pin_memory,
    std::optional<at::MemoryFormat> memory_format) {
  c10::DeviceGuard guard(sparse_target(device, nullptr));
  return at::native::empty_sparse(size, dtype, layout, device, pin_memory, memory_format);
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_coo_tensor_with_dims_and_tensors", TORCH_FN(npu_sparse_with_tensors));
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(npu_sparse_with_dims));
  m.impl("empty.memory_format", TORCH_FN(npu_sparse_empty));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_wrapper_));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&npu_sparse_fallback>());
}
