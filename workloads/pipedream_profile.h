// Importer for PipeDream's per-layer profiles (graph.txt, msr-fiddle/pipedream, MIT licence).
//
// Format: one node per line,
//   node4 -- Conv2d(3, 64, ...) -- forward_compute_time=1.2, backward_compute_time=2.3,
//            activation_size=1234.0, parameter_size=5678.000
// (all on one line; times in ms, sizes in bytes; a multi-output activation is written
// "[a; b; c]"), and one edge per line, starting with a tab: "\tnode4 -- node5".
// The Input node's forward time is data loading; it is kept as a layer (planners drop it as
// PipeDream's optimizer does). Every node line becomes one Layer (id = node name, description =
// the layer text), edges become inputs, and the layers are sorted topologically.
//
//   Workload w = ImportPipeDreamProfile("../shared/profiles/pipedream/vgg16/graph.txt");
#pragma once

#include <string>

#include "partition/workload.h"

namespace pipetwin {

// Reads and parses a graph.txt file. Throws InputError naming the file and the line number on a
// malformed or truncated line, a duplicate node, an edge to an unknown node, or a cycle.
Workload ImportPipeDreamProfile(const std::string& path);
// Parses graph.txt text; `name` stands for the file in errors.
Workload ParsePipeDreamProfile(const std::string& text, const std::string& name);

// True when the file looks like a PipeDream graph.txt rather than JSON (first non-blank
// character is not '{').
bool LooksLikePipeDreamProfile(const std::string& text);

}  // namespace pipetwin
