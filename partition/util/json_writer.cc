#include "partition/util/json_writer.h"

namespace pipetwin {

std::string JsonText(const nlohmann::json& doc, int indent) {
  return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pipetwin
