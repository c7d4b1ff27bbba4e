#include "calibration.hpp"

#include <algorithm>
#include <vector>

namespace lapse::vulkan {

VkResult Calibration::sample(CalibrationPoint& out) const noexcept
{
    VkCalibratedTimestampInfoEXT infos[2]{};
    infos[0].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
    infos[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
    infos[1].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
    infos[1].timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
    bool have = false;
    for (int i = 0; i < kSamples; ++i) {
        uint64_t stamps[2] = {0, 0};
        uint64_t deviation = 0;
        VkResult r = get_(device_, 2, infos, stamps, &deviation);
        if (r != VK_SUCCESS) return r;
        if (!have || deviation < out.max_deviation) {
            out.device_ticks = stamps[0];
            out.host_ns = static_cast<int64_t>(stamps[1]);
            out.max_deviation = deviation;
            have = true;
        }
    }
    return VK_SUCCESS;
}

bool Calibration::current(int64_t now_ns, CalibrationPoint& out, VkResult& failure)
{
    std::lock_guard<std::mutex> lock(mutex_);
    failure = VK_SUCCESS;
    if (!valid_ || now_ns - taken_at_ns_ >= refresh_ns_) {
        CalibrationPoint fresh;
        VkResult r = sample(fresh);
        if (r == VK_SUCCESS) {
            point_ = fresh;
            taken_at_ns_ = now_ns;
            valid_ = true;
        } else {
            failure = r;
        }
    }
    out = point_;
    return valid_;
}

VkResult Calibration::prime(int64_t now_ns)
{
    if (!enabled()) return VK_SUCCESS;
    CalibrationPoint point;
    VkResult failure = VK_SUCCESS;
    return current(now_ns, point, failure) ? VK_SUCCESS : failure;
}

bool offers_monotonic_calibration(const VkApi& vk, VkPhysicalDevice physical)
{
    if (vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT == nullptr) return false;
    uint32_t n = 0;
    vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(physical, &n, nullptr);
    std::vector<VkTimeDomainEXT> domains(n);
    vk.vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(physical, &n, domains.data());
    const auto offers = [&](VkTimeDomainEXT d) { return std::find(domains.begin(), domains.end(), d) != domains.end(); };
    return offers(VK_TIME_DOMAIN_DEVICE_EXT) && offers(VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT);
}

}  // namespace lapse::vulkan
