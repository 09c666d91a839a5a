// The result of a PJRT call, detached from the plugin's PJRT_Error (which is
// destroyed as soon as its code and message are read).
#pragma once

#include <cstring>
#include <string>

#include "runtime/pjrt_api.h"

namespace pjrt_score {

struct Status {
  pjrt::ErrorCode code = pjrt::ErrorCode::kOk;
  std::string message;

  bool ok() const { return code == pjrt::ErrorCode::kOk; }
  static Status Ok() { return {}; }
  static Status Make(pjrt::ErrorCode code, std::string message) {
    return {code, std::move(message)};
  }
};

// A zero-filled PJRT argument struct with struct_size set to our layout's size.
template <class Args>
Args MakeArgs() {
  Args args;
  std::memset(static_cast<void*>(&args), 0, sizeof(Args));
  args.struct_size = sizeof(Args);
  return args;
}

// 'INVALID_ARGUMENT' etc., the names JS sees in err.code.
const char* ErrorCodeName(pjrt::ErrorCode code);

}  // namespace pjrt_score
