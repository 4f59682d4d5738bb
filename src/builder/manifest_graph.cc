// The dependency graph of a manifest: cycles refused, jobs put in order (manifest_parser.h).
#include <algorithm>
#include <functional>
#include <queue>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "manifest_parser.h"

namespace kiln::build::detail {

// Refuses the first dependency cycle found by a depth-first search from each job in manifest
// order; the message starts the cycle at its earliest job in the manifest.
void Parser::check_cycles(const std::vector<Job>& jobs,
                          const std::vector<std::vector<std::size_t>>& edges) const {
  enum class State { unseen, open, done };
  std::vector<State> state(jobs.size(), State::unseen);
  std::vector<std::pair<std::size_t, std::size_t>> stack;  // (job, next edge to follow)
  for (std::size_t root = 0; root < jobs.size(); ++root) {
    if (state[root] != State::unseen) continue;
    state[root] = State::open;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto [job, next] = stack.back();
      if (next == edges[job].size()) {
        state[job] = State::done;
        stack.pop_back();
        continue;
      }
      ++stack.back().second;
      std::size_t dep = edges[job][next];
      if (state[dep] == State::unseen) {
        state[dep] = State::open;
        stack.emplace_back(dep, 0);
        continue;
      }
      if (state[dep] == State::done) continue;
      std::vector<std::size_t> cycle;
      auto start = std::find_if(stack.begin(), stack.end(),
                                [dep](const auto& frame) { return frame.first == dep; });
      for (auto frame = start; frame != stack.end(); ++frame) cycle.push_back(frame->first);
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      std::vector<std::string_view> names;
      for (std::size_t i : cycle) names.push_back(jobs[i].name);
      names.push_back(jobs[cycle.front()].name);
      const Job& first = jobs[cycle.front()];
      bool by_input = std::any_of(first.inputs.begin(), first.inputs.end(),
                                  [&](const Input& input) { return input.job == names[1]; });
      fail(fmt::format("{}: dependency cycle {}",
                       at(fmt::format("job \"{}\"", first.name), by_input ? "inputs" : "deps"),
                       fmt::join(names, " -> ")));
    }
  }
}

// Kahn's algorithm, always taking the earliest ready job in manifest order.
std::vector<std::size_t> Parser::order(const std::vector<Job>& jobs) const {
  std::vector<std::vector<std::size_t>> edges(jobs.size());
  std::vector<std::vector<std::size_t>> dependants(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    for (const std::string& dep : jobs[i].deps) {
      std::size_t d = first_index_.find(dep)->second;
      edges[i].push_back(d);
      dependants[d].push_back(i);
    }
  }
  check_cycles(jobs, edges);
  std::vector<std::size_t> waiting(jobs.size());
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    waiting[i] = edges[i].size();
    if (waiting[i] == 0) ready.push(i);
  }
  std::vector<std::size_t> result;
  while (!ready.empty()) {
    std::size_t i = ready.top();
    ready.pop();
    result.push_back(i);
    for (std::size_t dependant : dependants[i]) {
      if (--waiting[dependant] == 0) ready.push(dependant);
    }
  }
  return result;
}

}  // namespace kiln::build::detail
