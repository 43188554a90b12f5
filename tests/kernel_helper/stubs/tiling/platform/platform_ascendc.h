// Stub of the host-side platform query (tiling/platform/platform_ascendc.h): declarations only.
#ifndef ASCEND_STUB_PLATFORM_ASCENDC_H
#define ASCEND_STUB_PLATFORM_ASCENDC_H
#include <cstdint>

namespace fe {
class PlatFormInfos;
}

namespace platform_ascendc {
class PlatformAscendC {
public:
    explicit PlatformAscendC(fe::PlatFormInfos* info);
    uint32_t GetCoreNumAiv() const;
    uint32_t GetCoreNumAic() const;
    uint32_t GetLibApiWorkSpaceSize() const;
};
}  // namespace platform_ascendc
#endif
