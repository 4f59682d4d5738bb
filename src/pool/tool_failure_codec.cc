#include "tool_failure_codec.h"

#include "cbor.h"

namespace kiln::internal {

std::string encode_failure(const ToolFailure& failure) {
  nlohmann::json fields = {{"label", failure.label},
                           {"output", failure.output},
                           {"command_line", failure.command_line},
                           {"ending", static_cast<int>(failure.ending.kind)},
                           {"ending_value", failure.ending.value},
                           {"status", failure.status},
                           {"source", failure.source},
                           {"source_path", failure.source_path.string()}};
  std::string bytes;
  cbor::append(bytes, fields);
  return bytes;
}

std::optional<ToolFailure> decode_failure(std::string_view details) {
  try {
    nlohmann::json fields = cbor::decode(details.data(), details.size());
    int kind = fields.at("ending").get<int>();
    if (kind < static_cast<int>(Ending::Kind::exited) ||
        kind > static_cast<int>(Ending::Kind::cancelled)) {
      return std::nullopt;
    }
    return ToolFailure{
        .label = fields.at("label").get<std::string>(),
        .output = fields.at("output").get<std::string>(),
        .command_line = fields.at("command_line").get<std::string>(),
        .ending = {static_cast<Ending::Kind>(kind), fields.at("ending_value").get<int>()},
        .status = fields.at("status").get<std::string>(),
        .source = fields.at("source").get<std::string>(),
        .source_path = fields.at("source_path").get<std::string>()};
  } catch (const std::exception&) {  // not our fields: ProtocolError or nlohmann's type errors
    return std::nullopt;
  }
}

}  // namespace kiln::internal
