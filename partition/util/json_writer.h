// The one way pipetwin turns JSON into text, for files and for stdout. Strings that are not valid
// UTF-8 (a layer name from a graph.txt, a description cut by a caller) come out with U+FFFD in
// place of each bad byte instead of failing the command: the JSON pipetwin writes is always
// valid, whatever the input held.
//
//   std::cout << JsonText(report, 1) << "\n";
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace pipetwin {

// indent < 0: one line; otherwise that many spaces per level (nlohmann::json::dump).
std::string JsonText(const nlohmann::json& doc, int indent = -1);

}  // namespace pipetwin
