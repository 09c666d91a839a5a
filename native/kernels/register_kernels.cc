#include "kernels/register_kernels.h"

#include <map>
#include <mutex>

#include "kernels/ffi_handler.h"
#include "kernels/matmul_bf16_ffi.h"
#include "kernels/prefix_attention_ffi.h"

namespace pjrt_score {

bool RegisterKernels(const Plugin& plugin, std::string* why) {
  static const struct {
    const char* target;
    xla_ffi::Handler handler;
  } kHandlers[] = {
      {kPrefixAttentionTarget, &PrefixAttentionHandler},
      {kCausalAttentionTarget, &CausalAttentionHandler},
      {kPrefixAttentionBf16Target, &PrefixAttentionBf16Handler},
      {kCausalAttentionBf16Target, &CausalAttentionBf16Handler},
      {kQueryItemsAttentionTarget, &QueryItemsAttentionHandler},
      {kQueryItemsAttentionBf16Target, &QueryItemsAttentionBf16Handler},
      {kQueryItemsAttentionRopeTarget, &QueryItemsAttentionRopeHandler},
      {kQueryItemsAttentionRopeBf16Target, &QueryItemsAttentionRopeBf16Handler},
      {kMatmulBf16Target, &MatmulBf16Handler},
      {kMatmulBf16RmsNormTarget, &MatmulBf16RmsNormHandler},
      {kMatmulBf16SwiGluTarget, &MatmulBf16SwiGluHandler},
      {kMatmulBf16GeGluTarget, &MatmulBf16GeGluHandler},
      {kMatmulF32Target, &MatmulF32Handler},
      {kMatmulF32RmsNormTarget, &MatmulF32RmsNormHandler},
      {kMatmulF32SwiGluTarget, &MatmulF32SwiGluHandler},
      {kMatmulF32GeGluTarget, &MatmulF32GeGluHandler},
  };
  static std::mutex mu;
  static std::map<const Plugin*, std::string> done;  // plugin -> "" (registered) or why not
  std::lock_guard<std::mutex> lock(mu);
  auto found = done.find(&plugin);
  if (found == done.end()) {
    std::string result;
    const auto* ffi = static_cast<const xla_ffi::PjrtFfiExtension*>(
        plugin.FindExtension(xla_ffi::kPjrtExtensionTypeFfi));
    if (ffi == nullptr) {
      result = "the plugin has no FFI extension";
    } else if (ffi->base.struct_size <
                   offsetof(xla_ffi::PjrtFfiExtension, register_handler) + sizeof(void*) ||
               ffi->register_handler == nullptr) {
      result = "the plugin's FFI extension cannot register handlers";
    } else {
      for (const auto& h : kHandlers) {
        result = ffi::RegisterOne(plugin, ffi, h.target, h.handler);
        if (!result.empty()) break;
      }
    }
    found = done.emplace(&plugin, result).first;
  }
  *why = found->second;
  return found->second.empty();
}

}  // namespace pjrt_score
