// Stub of CANN's tiling-data macros (register/tilingdata_base.h): a plain struct with set_/get_ accessors.
#ifndef ASCEND_STUB_TILINGDATA_BASE_H
#define ASCEND_STUB_TILINGDATA_BASE_H
#include <cstddef>
#include <cstdint>

#include "../stub_common.h"

#define BEGIN_TILING_DATA_DEF(name) \
    struct name {                   \
        void SaveToBuffer(void* data, size_t capacity) const;  \
        size_t GetDataSize() const;
#define TILING_DATA_FIELD_DEF(type, field)          \
    type field;                                     \
    void set_##field(type value) { field = value; } \
    type get_##field() const { return field; }
#define TILING_DATA_FIELD_DEF_STRUCT(type, field) type field;
#define END_TILING_DATA_DEF }
#define REGISTER_TILING_DATA_CLASS(op, cls) static_assert(sizeof(cls) > 0, #op);
#endif
