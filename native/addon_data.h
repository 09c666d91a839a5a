// Per-environment data: the constructors, so natives can make instances.
#pragma once

#include <napi.h>

namespace pjrt_score {

struct AddonData {
  Napi::FunctionReference client_constructor;
  Napi::FunctionReference executable_constructor;
  Napi::FunctionReference buffer_constructor;
};

}  // namespace pjrt_score
