#include "lib/eal/eal_args.h"

#include <cstring>

namespace ofi_dpdk::eal {

std::optional<std::vector<std::string>> split_command_line(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
    } else if (c == '\\') {
      if (++i == line.size()) return std::nullopt;
      word += line[i];
      in_word = true;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) return std::nullopt;
  if (in_word) words.push_back(std::move(word));
  return words;
}

int eal_argument_count(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i)
    if (argv[i] != nullptr && std::strcmp(argv[i], "--") == 0) return i + 1;
  return argc;
}

bool wants_no_huge(const std::vector<std::string>& args) {
  for (const auto& arg : args)
    if (arg == "--no-huge") return true;
  return false;
}

std::string option_value(const std::vector<std::string>& args, std::string_view name,
                         std::string_view fallback) {
  std::string value(fallback);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == name && i + 1 < args.size())
      value = args[++i];
    else if (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=')
      value = arg.substr(name.size() + 1);
  }
  return value;
}

void for_each_vdev(std::vector<std::string>& args,
                   const std::function<void(std::string& device)>& rewrite) {
  constexpr std::string_view kJoined = "--vdev=";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--vdev" && i + 1 < args.size()) {
      rewrite(args[++i]);
    } else if (args[i].starts_with(kJoined)) {
      std::string device = args[i].substr(kJoined.size());
      rewrite(device);
      args[i] = std::string(kJoined) + device;
    }
  }
}

}  // namespace ofi_dpdk::eal
