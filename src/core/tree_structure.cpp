// Tree structures (include/tessel/tree_structure.h): the error of a structure text that does not fit.
#include "tessel/error.h"
#include "tessel/tree_structure.h"

namespace tessel::detail {

void bad_tree_structure(const std::string& what, std::string_view structure, size_t pos, const std::string& expected) {
  const std::string shown = structure.size() > 200 ? std::string(structure.substr(0, 200)) + "..." : std::string(structure);
  throw ValueError(what + ": the tree structure '" + shown + "' does not fit the C++ type: expected " + expected +
                   " at character " + std::to_string(pos) +
                   "; return (or pass) a tree of the same shape (containers, sizes and keys) as the type says");
}

}  // namespace tessel::detail
