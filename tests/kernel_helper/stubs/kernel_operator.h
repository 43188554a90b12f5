// Stub of the Ascend C kernel API (kernel_operator.h): declarations only, for g++ -fsyntax-only.
#ifndef ASCEND_STUB_KERNEL_OPERATOR_H
#define ASCEND_STUB_KERNEL_OPERATOR_H
#include <cstdint>

#include "stub_common.h"

#define __aicore__
#define __global__
#define __gm__
#define GM_ADDR uint8_t*

struct half {
    half() = default;
    half(float) {}
    operator float() const { return 0.0f; }
};
struct bfloat16_t {
    bfloat16_t() = default;
    bfloat16_t(float) {}
    operator float() const { return 0.0f; }
};
using event_t = int32_t;

// The CANN build generates the kernel-side tiling struct; the test passes its host-side twin.
#ifndef ASCEND_STUB_TILING_TYPE
#error "define ASCEND_STUB_TILING_TYPE (the tiling data struct) when checking a kernel"
#endif
#define GET_TILING_DATA(var, ptr) ASCEND_STUB_TILING_TYPE var{}; (void)(ptr)

namespace AscendC {
enum class QuePosition { GM, VECIN, VECOUT, VECCALC, A1, B1, CO1, CO2 };
using TPosition = QuePosition;
enum class HardEvent { MTE2_V, V_MTE3, V_S, S_V, S_MTE3, MTE3_S, MTE2_S };

template <typename T>
class GlobalTensor {
public:
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t size);
    GlobalTensor operator[](uint64_t offset) const;
};

template <typename T>
class LocalTensor {
public:
    LocalTensor operator[](uint32_t offset) const;
    void SetValue(uint32_t index, T value) const;
    T GetValue(uint32_t index) const;
};

template <QuePosition pos, int32_t depth>
class TQue {
public:
    template <typename T> LocalTensor<T> AllocTensor();
    template <typename T> bool EnQue(const LocalTensor<T>& tensor);
    template <typename T> LocalTensor<T> DeQue();
    template <typename T> void FreeTensor(LocalTensor<T>& tensor);
};

template <TPosition pos>
class TBuf {
public:
    template <typename T> LocalTensor<T> Get();
};

class TPipe {
public:
    template <QuePosition pos, int32_t depth> bool InitBuffer(TQue<pos, depth>& que, uint8_t num, uint32_t len);
    template <TPosition pos> bool InitBuffer(TBuf<pos>& buf, uint32_t len);
    template <HardEvent evt> int32_t FetchEventID();
    int32_t FetchEventID(HardEvent evt);
};

struct DataCopyExtParams {
    uint16_t blockCount;
    uint32_t blockLen;
    uint32_t srcStride;
    uint32_t dstStride;
    uint32_t rsv;
};
template <typename T>
struct DataCopyPadExtParams {
    bool isPad;
    uint8_t leftPadding;
    uint8_t rightPadding;
    T paddingValue;
};

template <typename T> void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count);
template <typename T> void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count);
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& params,
                 const DataCopyPadExtParams<T>& pad);
template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& params);

template <typename T> void Add(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count);
template <typename T> void Sub(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count);
template <typename T> void Mul(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count);
template <typename T> void Div(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count);
template <typename T> void Max(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count);
template <typename T> void Min(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& count);
template <typename T> void Relu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count);
template <typename T> void Exp(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count);
template <typename T> void Abs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count);
template <typename T> void Sqrt(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count);
template <typename T> void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar, const int32_t& count);
template <typename T> void Adds(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar, const int32_t& count);
template <typename T>
void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, const int32_t count);
template <typename T>
void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, const int32_t count,
               bool calIndex = false);
template <typename T>
void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, const int32_t count,
               bool calIndex = false);

template <HardEvent evt> void SetFlag(int32_t eventId);
template <HardEvent evt> void WaitFlag(int32_t eventId);

int64_t GetBlockIdx();
int64_t GetBlockNum();
}  // namespace AscendC

AscendC::TPipe* GetTPipePtr();
#endif
