// What a Client needs from the objects it made: to dispose them first when
// the client itself is disposed or collected.
#pragma once

namespace pjrt_score {

class ClientChild {
 public:
  virtual ~ClientChild() = default;
  // Called by the parent Client: release native state, forget the parent.
  virtual void DisposeFromParent() = 0;
};

}  // namespace pjrt_score
