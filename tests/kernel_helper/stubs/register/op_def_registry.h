// Stub of CANN's operator-definition and tiling-context API (register/op_def_registry.h): declarations only.
#ifndef ASCEND_STUB_OP_DEF_REGISTRY_H
#define ASCEND_STUB_OP_DEF_REGISTRY_H
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fe {
class PlatFormInfos;
}

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;
enum DataType { DT_FLOAT, DT_FLOAT16, DT_BF16, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_BOOL };
enum Format { FORMAT_ND, FORMAT_NCHW, FORMAT_FRACTAL_NZ };
}  // namespace ge

namespace gert {
class Shape {
public:
    size_t GetDimNum() const;
    int64_t GetDim(size_t index) const;
    void SetDimNum(size_t num);
    void SetDim(size_t index, int64_t value);
    int64_t GetShapeSize() const;
};
class StorageShape {
public:
    const Shape& GetStorageShape() const;
    const Shape& GetOriginShape() const;
};
class CompileTimeTensorDesc {
public:
    ge::DataType GetDataType() const;
};
class RuntimeAttrs {
public:
    template <typename T> const T* GetAttrPointer(size_t index) const;
};
class TilingData {
public:
    void* GetData();
    size_t GetCapacity() const;
    void SetDataSize(size_t size);
};
class TilingContext {
public:
    const StorageShape* GetInputShape(size_t index) const;
    const StorageShape* GetOutputShape(size_t index) const;
    const CompileTimeTensorDesc* GetInputDesc(size_t index) const;
    const RuntimeAttrs* GetAttrs() const;
    fe::PlatFormInfos* GetPlatformInfo() const;
    ge::graphStatus SetBlockDim(uint32_t blockDim);
    TilingData* GetRawTilingData();
    size_t* GetWorkspaceSizes(size_t num);
};
class InferShapeContext {
public:
    const Shape* GetInputShape(size_t index) const;
    Shape* GetOutputShape(size_t index);
};
class InferDataTypeContext {
public:
    ge::DataType GetInputDataType(size_t index) const;
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType dtype);
};
}  // namespace gert

namespace ops {
enum Option { REQUIRED, OPTIONAL, DYNAMIC };
using TilingFn = ge::graphStatus (*)(gert::TilingContext*);
using InferShapeFn = ge::graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeFn = ge::graphStatus (*)(gert::InferDataTypeContext*);

class OpParamDef {
public:
    OpParamDef& ParamType(Option option);
    OpParamDef& DataType(std::vector<ge::DataType> types);
    OpParamDef& Format(std::vector<ge::Format> formats);
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format> formats);
};
class OpAttrDef {
public:
    OpAttrDef& AttrType(Option option);
    OpAttrDef& Float(float value);
    OpAttrDef& Int(int64_t value);
    OpAttrDef& Bool(bool value);
};
class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(TilingFn fn);
    OpAICoreDef& AddConfig(const char* soc);
};
class OpDef {
public:
    explicit OpDef(const char* type);
    OpParamDef& Input(const char* name);
    OpParamDef& Output(const char* name);
    OpAttrDef& Attr(const char* name);
    OpDef& SetInferShape(InferShapeFn fn);
    OpDef& SetInferDataType(InferDataTypeFn fn);
    OpAICoreDef& AICore();
};
}  // namespace ops

#define OP_ADD(opType) static opType g_stub_op_##opType(#opType)
#endif
