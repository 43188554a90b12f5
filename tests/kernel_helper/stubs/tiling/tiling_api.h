// Stub of the host-side matmul tiling library (tiling/tiling_api.h): declarations only.
#ifndef ASCEND_STUB_TILING_API_H
#define ASCEND_STUB_TILING_API_H
#include <cstdint>

#include "../stub_common.h"
#include "platform/platform_ascendc.h"

namespace optiling {
using ::TCubeTiling;
}

namespace matmul_tiling {
enum class TPosition { GM, VECIN, VECOUT, TSCM };
enum class CubeFormat { ND, NZ };
enum class DataType { DT_FLOAT, DT_FLOAT16, DT_BF16, DT_INT8, DT_INT32 };

class MultiCoreMatmulTiling {
public:
    explicit MultiCoreMatmulTiling(const platform_ascendc::PlatformAscendC& platform);
    int32_t SetDim(int32_t dim);
    int32_t SetAType(TPosition pos, CubeFormat format, DataType type, bool transpose = false);
    int32_t SetBType(TPosition pos, CubeFormat format, DataType type, bool transpose = false);
    int32_t SetCType(TPosition pos, CubeFormat format, DataType type);
    int32_t SetShape(int32_t m, int32_t n, int32_t k);
    int32_t SetOrgShape(int32_t m, int32_t n, int32_t k);
    int32_t SetFixSplit(int32_t baseM = -1, int32_t baseN = -1, int32_t baseK = -1);
    int32_t SetBias(bool enable = false);
    int32_t SetBufferSpace(int32_t l1 = -1, int32_t l0c = -1, int32_t ub = -1);
    int64_t GetTiling(TCubeTiling& tiling);
};
}  // namespace matmul_tiling
#endif
