#include "partition/report/kept_core.h"

#include <algorithm>

namespace pipetwin {

std::map<int, double> KeptCoreShares(std::vector<CoreUse> uses) {
  uses.erase(std::remove_if(uses.begin(), uses.end(), [](const CoreUse& u) { return u.core < 0; }),
             uses.end());
  std::stable_sort(uses.begin(), uses.end(),
                   [](const CoreUse& a, const CoreUse& b) { return a.start_s < b.start_s; });
  std::map<int, int> last;  // core -> the worker of its previous op
  std::map<int, double> kept, total;
  for (const CoreUse& u : uses) {
    const auto it = last.find(u.core);
    if (it != last.end() && it->second == u.worker) kept[u.worker] += u.seconds;
    total[u.worker] += u.seconds;
    last[u.core] = u.worker;
  }
  std::map<int, double> shares;
  for (const auto& [worker, seconds] : total)
    if (seconds > 0) shares[worker] = kept[worker] / seconds;
  return shares;
}

}  // namespace pipetwin
