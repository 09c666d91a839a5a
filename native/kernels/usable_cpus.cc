#include "kernels/usable_cpus.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pjrt_score {
namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

int AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

// CPUs a quota of `quota` microseconds per `period` allows, rounded up; 0 for no quota.
int QuotaCpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<int>(std::max<long long>(1, (quota + period - 1) / period));
}

// A cgroup file system's mount: where it is, and which cgroup its root shows.
struct Mount {
  std::string root;   // the cgroup path shown at the mount point ("/" outside a cgroup namespace)
  std::string point;  // the mount point
};

// The cgroup2 mount, and the cgroup v1 mount that holds the cpu controller (/proc/self/mountinfo).
void FindMounts(Mount* v2, Mount* v1cpu) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "id parent major:minor root point options [optional...] - fstype source superoptions"
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream head(line.substr(0, dash)), tail(line.substr(dash + 3));
    std::string id, parent, devno, root, point, fstype, source, super;
    head >> id >> parent >> devno >> root >> point;
    tail >> fstype >> source >> super;
    if (fstype == "cgroup2" && v2->point.empty()) {
      *v2 = {root, point};
    } else if (fstype == "cgroup" && v1cpu->point.empty()) {
      std::istringstream opts(super);
      std::string opt;
      while (std::getline(opts, opt, ','))
        if (opt == "cpu") *v1cpu = {root, point};
    }
  }
}

// The folder of cgroup `path` under `mount`, or "" when the path is not below the mount's root.
std::string CgroupDir(const Mount& mount, const std::string& path) {
  if (mount.point.empty()) return "";
  if (mount.root == "/") return mount.point + (path == "/" ? "" : path);
  if (path.compare(0, mount.root.size(), mount.root) != 0) return "";
  return mount.point + path.substr(mount.root.size());
}

// The smallest quota from `dir` up to the mount point: `read` gives one folder's CPUs (0: none).
template <typename Read>
int SmallestQuotaUpTo(std::string dir, const std::string& top, Read read, std::string* where) {
  int best = 0;
  for (;;) {
    std::string file;
    const int cpus = read(dir, &file);
    if (cpus > 0 && (best == 0 || cpus < best)) {
      best = cpus;
      *where = file;
    }
    if (dir.size() <= top.size()) break;
    const size_t slash = dir.find_last_of('/');
    if (slash == std::string::npos || slash < top.size()) break;
    dir = dir.substr(0, slash);
  }
  return best;
}

int CgroupQuotaCpus(std::string* where) {
  Mount v2, v1cpu;
  FindMounts(&v2, &v1cpu);
  std::string v2path, v1path;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    // "hierarchy:controllers:path"
    const size_t a = line.find(':'), b = line.find(':', a == std::string::npos ? 0 : a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string hierarchy = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (hierarchy == "0" && controllers.empty()) v2path = path;
    std::istringstream list(controllers);
    std::string c;
    while (std::getline(list, c, ','))
      if (c == "cpu") v1path = path;
  }
  int best = 0;
  std::string file;
  const std::string v1dir = CgroupDir(v1cpu, v1path);
  if (!v1path.empty() && !v1dir.empty()) {
    const int cpus = SmallestQuotaUpTo(
        v1dir, v1cpu.point,
        [](const std::string& dir, std::string* f) {
          *f = dir + "/cpu.cfs_quota_us";
          const std::string quota = ReadFirstLine(*f),
                            period = ReadFirstLine(dir + "/cpu.cfs_period_us");
          if (quota.empty() || period.empty()) return 0;
          return QuotaCpus(std::atoll(quota.c_str()), std::atoll(period.c_str()));
        },
        &file);
    if (cpus > 0) best = cpus, *where = file;
  }
  const std::string v2dir = CgroupDir(v2, v2path);
  if (!v2path.empty() && !v2dir.empty()) {
    const int cpus = SmallestQuotaUpTo(
        v2dir, v2.point,
        [](const std::string& dir, std::string* f) {
          *f = dir + "/cpu.max";
          std::istringstream max(ReadFirstLine(*f));  // "max 100000" or "150000 100000"
          std::string quota;
          long long period = 0;
          max >> quota >> period;
          if (quota.empty() || quota == "max") return 0;
          return QuotaCpus(std::atoll(quota.c_str()), period);
        },
        &file);
    if (cpus > 0 && (best == 0 || cpus < best)) best = cpus, *where = file;
  }
  return best;
}

}  // namespace

UsableCpus ReadUsableCpus() {
  UsableCpus out;
  out.affinity = AffinityCpus();
  std::string file;
  out.quota = CgroupQuotaCpus(&file);
  out.usable = out.affinity;
  out.source = "affinity";
  if (out.quota > 0 && out.quota < out.affinity) {
    out.usable = out.quota;
    out.source = "cgroup quota (" + file + ")";
  }
  return out;
}

}  // namespace pjrt_score
