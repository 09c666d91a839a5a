#include "runtime/large_stack.h"

#include <exception>
#include <string>

#ifndef _WIN32
#include <pthread.h>
#endif

namespace pjrt_score {

namespace {

struct Job {
  const std::function<Status()>* work;
  Status status;
};

Status CallCatching(const std::function<Status()>& work) {
  try {
    return work();
  } catch (const std::exception& e) {
    return Status::Make(pjrt::ErrorCode::kInternal, std::string("native failure: ") + e.what());
  } catch (...) {
    return Status::Make(pjrt::ErrorCode::kInternal, "native failure");
  }
}

#ifndef _WIN32
void* RunJob(void* arg) {
  auto* job = static_cast<Job*>(arg);
  job->status = CallCatching(*job->work);
  return nullptr;
}
#endif

}  // namespace

Status RunOnLargeStack(size_t stack_bytes, const std::function<Status()>& work) {
#ifdef _WIN32
  (void)stack_bytes;
  return CallCatching(work);  // Windows builds are not supported by the plugins we load
#else
  Job job{&work, Status::Ok()};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) {
    return Status::Make(pjrt::ErrorCode::kResourceExhausted, "could not set up a worker thread");
  }
  pthread_t thread;
  int rc = pthread_attr_setstacksize(&attr, stack_bytes);
  if (rc == 0) rc = pthread_create(&thread, &attr, RunJob, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    return Status::Make(pjrt::ErrorCode::kResourceExhausted,
                        "could not start a worker thread with a " +
                            std::to_string(stack_bytes >> 20) + " MiB stack (error " +
                            std::to_string(rc) + ")");
  }
  pthread_join(thread, nullptr);
  return job.status;
#endif
}

}  // namespace pjrt_score
