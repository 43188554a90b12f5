// Stub of the Ascend C high-level Matmul API (lib/matmul_intf.h): declarations only.
#ifndef ASCEND_STUB_MATMUL_INTF_H
#define ASCEND_STUB_MATMUL_INTF_H
#include "../kernel_operator.h"

enum class CubeFormat { ND, NZ };

namespace matmul {
template <AscendC::TPosition pos, CubeFormat format, typename T>
struct MatmulType {
    using Type = T;
};

template <typename A, typename B, typename C>
class Matmul {
public:
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1);
    void SetTensorA(const AscendC::GlobalTensor<typename A::Type>& a, bool transpose = false);
    void SetTensorB(const AscendC::GlobalTensor<typename B::Type>& b, bool transpose = false);
    void IterateAll(const AscendC::GlobalTensor<typename C::Type>& c, uint8_t enAtomic = 0);
    void End();
};
}  // namespace matmul

GM_ADDR GetSysWorkSpacePtr();
#define REGIST_MATMUL_OBJ(pipe, workspace, obj, tiling) \
    do {                                                 \
        (void)(pipe);                                    \
        (void)(workspace);                               \
        (void)(obj);                                     \
        const TCubeTiling* stubTiling = (tiling);        \
        (void)stubTiling;                                \
    } while (0)
#endif
