// Importer for PipeDream's per-layer profiles (graph.txt, msr-fiddle/pipedream, MIT licence).
//
// Format: one node per line,
//   node4 -- Conv2d(3, 64, ...) -- forward_compute_time=1.2, backward_compute_time=2.3,
//            activation_size=1234.0, parameter_size=5678.000
// (all on one line; times in ms, sizes in bytes; a multi-output activation is written
// "[a; b; c]"), and one edge per line, starting with a tab: "\tnode4 -- node5".
// The Input node's forward time is data loading: it becomes the workload's data_loading_ms
// (cost/data_loading.h) and the node a layer of no compute. Every node line becomes one Layer (id = node name, description =
// the layer text), edges become inputs, and the layers are sorted topologically.
//
//   Workload w = ImportPipeDreamProfile("../shared/profiles/pipedream/vgg16/graph.txt");
#pragma once

#include <string>

#include "partition/model/workload.h"

namespace pipetwin {

// Reads and parses a graph.txt file. Throws InputError naming the file and the line number on a
// malformed or truncated line, a non-numeric, negative, NaN or infinite value, a duplicate node,
// a duplicate edge, an edge to an unknown node, or an empty file; a cycle is reported by
// ValidateAndSortWorkload (file and the cycle's nodes, no line).
//
// The result: name = the model directory of a ".../<model>/graph.txt" (else the file's stem),
// reference.source "pipedream-profile", reference.device "profiled GPU (PipeDream)",
// parameter_dtype_bytes 4 and parameters = parameter_bytes / 4 (PipeDream profiles fp32 models),
// output_bytes set for layers with several outputs. graph.txt does not record the minibatch size
// the times were taken at, so reference.batch_size is `reference_batch_size` (1 unless the caller
// knows better, e.g. from the Input node's activation size).
Workload ImportPipeDreamProfile(const std::string& path, int reference_batch_size = 1);
// Parses graph.txt text; `name` stands for the file in errors and gives the workload its name.
Workload ParsePipeDreamProfile(const std::string& text, const std::string& name,
                               int reference_batch_size = 1);

// True when the file looks like a PipeDream graph.txt rather than JSON: the first non-blank
// character is not '{' or '[' and the first non-blank line has a " -- " separator. Other text
// (empty, "precious") is left to the JSON reader, which calls it malformed JSON.
bool LooksLikePipeDreamProfile(const std::string& text);

}  // namespace pipetwin
