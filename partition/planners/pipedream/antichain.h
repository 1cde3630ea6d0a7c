// PipeDream's linearisation of a layer DAG: the DAG of antichains ("states").
//
// PipeDream's optimizer (msr-fiddle/pipedream, graph/graph.py: antichain_dag, augment_antichain,
// next_antichains; optimizer/optimizer_graph_hierarchical.py: main) does not partition the layer
// graph directly. It walks the graph's antichains (sets of mutually unreachable layers) from the
// first source to the sinks; a state is one antichain, and the layers a stage up to that state
// holds are the state's down-set (the antichain and every layer before it). For a chain every
// state is one layer. Before that walk, sources described "Input..." (data loading) and sinks
// described "__getitem__..." (unused tuple outputs) are taken out of the graph.
//
// Determinism. The optimizer numbers states in the order it discovers them (breadth first) and
// then sorts them by a depth-first topological sort; both follow the order in which it iterates
// sets of node names (which can change with PYTHONHASHSEED) and the order graph.txt lists the
// edges. This class runs the same algorithm with every set iterated in ascending layer index
// (the workload's topological order) and successors in ascending index, so the numbering is a
// pure function of the workload. On the six shared profiles the states are the optimizer's
// (the same antichains); the numbering is the optimizer's own for AlexNet, VGG-16 and GNMT, and
// a different topological order for ResNet and SqueezeNet, whose graph.txt lists some edges out
// of index order (a Workload does not keep the edge order). The top level's costs do not depend
// on the numbering; lower levels' can in principle (the code's range sums on a DAG), and on
// those profiles they matched the optimizer's to 1e-15.
//
//   AntichainLinearization states = LinearizeLikePipeDream(workload);
//   states.StateCount();                  // 40 for VGG-16 (41 layers less the input)
//   states.IsAncestor(3, 10);             // true on a chain
//   states.RangeCompute(4, 9);            // seconds of (forward + backward) in states 4..9
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "partition/model/workload.h"

namespace pipetwin {

// A fixed-size set of small integers (layer or state indices).
class DenseBitset {
 public:
  explicit DenseBitset(int size = 0) : size_(size), words_((size + 63) / 64, 0) {}
  int size() const { return size_; }
  void Set(int i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  bool Test(int i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  DenseBitset& operator|=(const DenseBitset& other);
  bool Intersects(const DenseBitset& other) const;
  bool operator==(const DenseBitset& other) const { return words_ == other.words_; }
  int Count() const;
  // The members in ascending order.
  std::vector<int> Members() const;

 private:
  int size_;
  std::vector<uint64_t> words_;
};

// Why the optimizer leaves a layer out of its states.
enum class PipeDreamLayerRole {
  kModel,         // an ordinary layer: it belongs to the down-set of some state
  kInputSource,   // a source described "Input...": zeroed and removed; it joins the first stage
  kGetitemSink,   // a sink described "__getitem__...": removed; it joins its producer's stage
};

// One state: an antichain of the layer graph and the sums over its down-set.
struct AntichainState {
  std::vector<int> antichain;  // mutually unreachable layers, ascending layer index
  // The antichain plus every predecessor that still feeds a layer outside the predecessors of
  // the antichain node it precedes (graph.py's augment_antichain): the layers whose outputs
  // cross a cut placed after this state.
  std::vector<int> augmented;
  double output_activation_bytes = 0;  // activation bytes summed over `augmented`
  // Sums over the down-set (every layer that is in the antichain or precedes it).
  double compute_s = 0;                // (forward_ms + backward_ms) / 1000
  double activation_bytes = 0;
  double parameter_bytes = 0;
};

// The most antichains the exact search enumerates. Branchy graphs have exponentially many
// (NASNet's cells, Inception's modules), and the partitioner's tables grow with the square of
// the states; beyond this the states are the prefixes of the workload's topological order. Every
// plan found is a valid PipeDream layout (its stages are contiguous in that order). The prefixes
// and the antichains' down-sets are different families of down-sets, neither containing the
// other (on GNMT the prefix search finds a plan 9% faster than the optimizer's states allow), so
// the bound stated for the result is the one both obey: no plan is faster than the whole
// model's compute split evenly over every machine (PipeDreamResult::lower_bound_s).
constexpr size_t kMaxExactStates = 1000;

// The states of a workload in topological order, with their ancestor relation.
class AntichainLinearization {
 public:
  int StateCount() const { return static_cast<int>(states_.size()); }
  int LayerCount() const { return static_cast<int>(roles_.size()); }
  const AntichainState& State(int s) const { return states_[s]; }
  PipeDreamLayerRole Role(int layer) const { return roles_[layer]; }
  // True when state `a` precedes state `b` in the antichain DAG (strictly, not only directly).
  bool IsAncestor(int a, int b) const { return ancestor_bits_[b].Test(a); }
  // The strict ancestors of state `s`, ascending.
  const std::vector<int>& Ancestors(int s) const { return ancestors_[s]; }
  // The layers of state `s`'s down-set.
  const DenseBitset& DownSet(int s) const { return down_sets_[s]; }
  // True when the states are the optimizer's antichains; false when there were more than
  // kMaxExactStates of them and the states are the prefixes of the workload's topological
  // order instead (LinearizeLikePipeDream).
  bool exact() const { return exact_; }

  // Range sums over states first..last (inclusive) as the optimizer takes them: the value at
  // `last` minus the value at first-1 (the value at `last` alone when first is 0). On a DAG this
  // is a difference of down-sets only when first-1 is an ancestor of `last`.
  double RangeCompute(int first, int last) const { return Range(&AntichainState::compute_s, first, last); }
  double RangeActivation(int first, int last) const {
    return Range(&AntichainState::activation_bytes, first, last);
  }
  double RangeParameters(int first, int last) const {
    return Range(&AntichainState::parameter_bytes, first, last);
  }

 private:
  friend AntichainLinearization LinearizeLikePipeDream(const Workload& workload,
                                                       size_t max_exact_states);
  double Range(double AntichainState::*field, int first, int last) const {
    return first == 0 ? states_[last].*field : states_[last].*field - states_[first - 1].*field;
  }

  std::vector<AntichainState> states_;
  std::vector<PipeDreamLayerRole> roles_;
  std::vector<DenseBitset> down_sets_;       // per state, over layers
  std::vector<DenseBitset> ancestor_bits_;   // per state, over states
  std::vector<std::vector<int>> ancestors_;  // per state, ascending
  bool exact_ = true;
};


// Builds the states as PipeDream's optimizer does (see the file comment), or the prefix states
// when the antichains exceed kMaxExactStates. The walk starts at the
// first layer, in the workload's order, that has no inputs once the Input sources are removed
// (the optimizer takes the first in graph.txt's line order: the same layer on the shared
// profiles, GNMT's encoder embedding among its three remaining sources).
// Throws InputError when no layer is left once they are removed.
AntichainLinearization LinearizeLikePipeDream(const Workload& workload,
                                              size_t max_exact_states = kMaxExactStates);

// Which stage each layer joins when stage s ends at state stage_end_states[s] (inclusive, in
// increasing order): the first stage whose end state's down-set holds the layer, as the
// optimizer assigns them (optimizer_graph_hierarchical.py, main). A layer no state holds (an
// Input source, a __getitem__ sink, a layer the walk never reaches) joins the stage of the layer
// before it in the workload's order, kept between its inputs' stages and its consumers' stages.
// (The optimizer puts every Input on stage 0, whose runtime loads all data; pipetwin keeps an
// input beside its place in the order, so a second input of a branchy model, such as GNMT's
// decoder input, sits with the stage that consumes it and stages stay contiguous.) The result
// never sends an edge to an earlier stage.
std::vector<int> AssignLayersToStages(const AntichainLinearization& states,
                                      const Workload& workload,
                                      const std::vector<int>& stage_end_states);

// A topological order of the layers in which every stage is a contiguous range: layers sorted by
// (stage, workload index). It is the identity when the stages already are contiguous.
std::vector<int> StageContiguousOrder(const std::vector<int>& stage_of_layer);

}  // namespace pipetwin
