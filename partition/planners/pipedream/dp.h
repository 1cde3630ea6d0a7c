// The dynamic program of PipeDream's partitioner at one topology level.
//
// SOSP'19 section 3.1: A(i..j, m) is the time of the slowest stage of the best pipeline that
// runs states i..j on m machines of this level. Either one stage replicated m times, or a
// pipeline A(i..k, m - m') followed by a stage k+1..j replicated m' times, with the cut between
// them; k ranges over the ancestors of state j in the antichain DAG. A level above sees, as the
// compute time of a range, the best time of that range with all machines of the level below
// (the paper's A^{k-1}(i..j, m_{k-1})). The public optimizer's version of this recurrence is
// compute_partitioning in optimizer/optimizer_graph_hierarchical.py; the cost model
// (PipeDreamCostModel) picks the paper's or the code's stage and cut costs.
//
// Rows: a range starting at state i > 0 is "after state i-1" (sums are value(last) minus
// value(i-1)). The highest level solves only row 0 (the whole model); lower levels solve every
// row, because the level above asks for arbitrary ranges.
//
//   PipeDreamLevelTable lower = SolvePipeDreamLevel(states, options, 0, nullptr);
//   PipeDreamLevelTable top = SolvePipeDreamLevel(states, options, 1, &lower);
//   double t = top.Best(0, states.StateCount() - 1);
//   std::vector<PipeDreamSpan> stages = top.Layout(0, states.StateCount() - 1);
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "partition/planners/pipedream/antichain.h"
#include "partition/planners/pipedream/options.h"

namespace pipetwin {

// A stage of one level's layout: states first_state..last_state (inclusive), replicated.
struct PipeDreamSpan {
  int first_state = 0;
  int last_state = 0;
  int replicas = 1;
  // Machines of this level given to this stage and the stages before it in its range when the
  // stage was costed: the count the memory rule saw (with use_fewer_machines in the code's
  // model it can exceed the machines actually used).
  int machines_through = 1;
};

// A(i..j, m) for one level, with what is needed to walk the best layout back.
class PipeDreamLevelTable {
 public:
  // The optimizer's None: no configuration (the memory rule excluded every one).
  static constexpr double kNone = std::numeric_limits<double>::infinity();

  PipeDreamLevelTable(int rows, int states, int machines, bool fewer_is_minimum);

  int Rows() const { return rows_; }
  int Machines() const { return machines_; }
  // Best time of states first..last with every machine of this level (kNone when none fits):
  // the compute time the level above sees. With the paper's model and use_fewer_machines, the
  // minimum over 1..M machines; otherwise the entry for M machines, as the optimizer reads it.
  double Best(int first, int last) const { return CellAt(first, last, BestMachines(first, last)).time_s; }
  // The stages of that best configuration, first to last. Requires Best(first, last) < kNone.
  std::vector<PipeDreamSpan> Layout(int first, int last) const;

  struct Cell {
    double time_s = kNone;
    int32_t split_state = -1;       // k: the last stage starts at k+1; -1 for a single stage
    int16_t prefix_machines = 0;    // machines of the pipeline before the last stage
    int16_t replicas = 0;           // replicas of the last (or only) stage
  };
  Cell& CellAt(int first, int last, int machines) { return cells_[Index(first, last, machines)]; }
  const Cell& CellAt(int first, int last, int machines) const {
    return cells_[Index(first, last, machines)];
  }

 private:
  // Row i holds the ranges i..j for j >= i, each with machines 1..M.
  size_t Index(int first, int last, int machines) const {
    const size_t row_start = static_cast<size_t>(first) * states_ -
                             static_cast<size_t>(first) * (first - 1) / 2;
    return (row_start + (last - first)) * machines_ + (machines - 1);
  }
  int BestMachines(int first, int last) const;

  int rows_, states_, machines_;
  bool fewer_is_minimum_;
  std::vector<Cell> cells_;
};

// How many minibatches' activations and weights a stage keeps, as the memory rule counts them,
// when `machines_through` machines of a level with `level_machines` run it and the stages before
// it. The code: ceil((M - machines_through) / replicas), the machines after it per replica. The
// paper's model counts the stage's own minibatch too (+1), so that a straight pipeline's input
// stage keeps M minibatches, its NOAM (SOSP'19 section 3.2).
double PipeDreamStashFactor(PipeDreamCostModel model, int level_machines, int machines_through,
                            int replicas);

// What solving every level costs, known before anything is allocated: a level below the top
// fills every row, n(n+1)/2 ranges i..j with M cells each (16 bytes), and each cell tries every
// ancestor k of j (j - i of them on a chain) with every split of its machines (M); the top
// level fills row 0 only. So at most sum over lower levels of n^3 M^2 / 6 steps and n^2 M / 2
// cells, plus n^2 M / 2 steps and n M cells at the top (n states, M machines of the level).
struct PipeDreamWork {
  double steps = 0;
  double table_bytes = 0;
};
PipeDreamWork EstimatePipeDreamWork(int states, const PipeDreamOptions& options);

// Solves level `level` of options.levels. `lower` is the solved level below (nullptr at level
// 0); the highest level solves only row 0. Requires ValidatePipeDreamOptions(options).
PipeDreamLevelTable SolvePipeDreamLevel(const AntichainLinearization& states,
                                        const PipeDreamOptions& options, int level,
                                        const PipeDreamLevelTable* lower);

}  // namespace pipetwin
