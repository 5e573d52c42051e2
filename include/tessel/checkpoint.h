#pragma once
// Checkpoints of trees of arrays in HDF5 files, namespace ts::checkpoints (ts::checkpoint is
// jax.checkpoint, rematerialization, in tessel/transforms.h) (Orbax's checkpointing, on the format that
// h5py, netCDF and ocean-model tools read): each process writes only the pieces its devices
// own, restore lays the arrays out on any mesh, sharding or number of processes, a save is
// committed atomically by a rename, and CheckpointManager keeps the last N steps.
// docs/checkpoint.md describes the file format and what a crash can and cannot lose.
//
// Every function here is collective in a multi-process job (mpirun): every process calls it
// with the same path and a tree of the same structure, as with Orbax.
#include <cstdint>
#include <string>
#include <vector>

#include "tessel/array.h"
#include "tessel/export.h"
#include "tessel/sharding.h"
#include "tessel/tree.h"
#include "tessel/tree_structure.h"

namespace tessel::checkpoints {

/// How save writes a checkpoint.
struct SaveOptions {
  /// The step stored in the file (read back by read_metadata; CheckpointManager sets it).
  int64_t step = 0;
  /// Free text stored with the checkpoint, typically JSON (Orbax's custom metadata).
  std::string metadata_json{};
  /// Return once the arrays are computed and referenced (never copied); the file is written
  /// by a background thread. wait_until_finished() waits for it; an error it met is thrown
  /// by the next call of this module.
  bool async = false;
  /// Replace an existing checkpoint at the path (else a ValueError).
  bool overwrite = false;
  /// Store a CRC-32C of the file in its header, checked by restore, read_metadata and verify
  /// (each process reads back its slice of the file, from the page cache, before the commit).
  bool checksum = true;
};

/// What restore makes of one leaf: its global shape, dtype and layout.
struct LeafTarget {
  Shape shape{};
  DType dtype = DType::float32;
  /// The layout of the restored array; invalid (default) means the default device.
  Sharding sharding{};
};

/// What a checkpoint file says about itself (read_metadata).
struct Metadata {
  int64_t step = 0;
  std::string metadata_json{};
  /// The tessel version that wrote the file ("0.1.0").
  std::string tessel_version;
  /// tree_structure() of the saved tree.
  std::string tree_structure;
  /// Each leaf's path in the tree, in leaf order, as its HDF5 dataset name ("/params/w").
  std::vector<std::string> leaf_paths;
  /// Each leaf's global shape and dtype, in leaf order.
  std::vector<ShapeDtype> leaves;
};

/// The HDF5 dataset name of every leaf of a tree of structure `structure` (tree_structure's
/// text), in leaf order: tuple and vector elements by position, map entries by key, the
/// leaves of a TESSEL_TREE struct by position: `(*{1:w*})` gives "/0" and "/1/w". Characters
/// HDF5 names cannot hold ('/', '%', control characters, a lone ".") are written %XX.
TESSEL_API std::vector<std::string> leaf_paths(const std::string& structure);

/// Writes the leaves of a tree of structure `structure` to `path` (what save does after
/// flattening). Collective over the processes of the job.
TESSEL_API void save_leaves(const std::string& path, const std::string& structure, const std::vector<Array>& leaves,
                            const SaveOptions& options = {});

/// Reads the leaves of the checkpoint at `path`, checking that it holds a tree of structure
/// `structure` whose leaves have the targets' shapes and dtypes (a ValueError,
/// ShapeError or DTypeError naming the leaf path and both values otherwise), laid out by the
/// targets' shardings. Each process reads only the blocks of its own devices.
TESSEL_API std::vector<Array> restore_leaves(const std::string& path, const std::string& structure,
                                             const std::vector<LeafTarget>& targets);

/// The metadata of the checkpoint at `path`; a tessel::Error naming the path when it is not a
/// readable tessel checkpoint.
TESSEL_API Metadata read_metadata(const std::string& path);

/// Checks the whole checkpoint at `path`: its length and checksum as committed, and its
/// metadata. A tessel::Error naming the path and the damage otherwise. (restore checks the
/// length and HDF5's metadata checksums; only verify reads every byte.)
TESSEL_API void verify(const std::string& path);

/// Waits until every asynchronous save of this process is written and committed; throws the
/// error of one that failed.
TESSEL_API void wait_until_finished();

/// Saves tree `tree` (any TreeTraits type: Array, vectors, tuples, string maps, TESSEL_TREE
/// structs) to the HDF5 file `path`: written under a temporary name and renamed when every
/// process has written and flushed its pieces, so `path` is either the previous file or the
/// complete new one. Each process writes only the pieces its devices own (replicated pieces
/// once). See SaveOptions for the step, metadata and asynchronous saves.
template <class T> void save(const std::string& path, const T& tree, const SaveOptions& options = {}) {
  save_leaves(path, tree_structure(tree), tree_leaves(tree), options);
}

/// Restores the checkpoint at `path` into a tree shaped like `target`: each leaf gets the
/// shape, dtype and sharding of target's leaf (its values are not read), so a checkpoint
/// saved on one mesh restores on any other mesh, sharding or process count.
template <class T> T restore(const std::string& path, const T& target) {
  std::vector<LeafTarget> targets;
  for (const Array& a : tree_leaves(target)) targets.push_back({a.shape(), a.dtype(), a.sharding()});
  std::vector<Array> leaves = restore_leaves(path, tree_structure(target), targets);
  size_t pos = 0;
  return tree_replace_leaves(target, leaves, pos);
}

/// Restores the checkpoint at `path` with the tree structure, shapes and dtypes it was saved
/// with (vectors and maps take the saved sizes and keys), every array on the default device.
template <class T> T restore(const std::string& path) {
  Metadata m = read_metadata(path);
  T skeleton = tree_skeleton<T>(m.tree_structure, "checkpoints::restore(\"" + path + "\")");
  std::vector<LeafTarget> targets;
  for (const ShapeDtype& l : m.leaves) targets.push_back({l.shape, l.dtype, Sharding()});
  std::vector<Array> leaves = restore_leaves(path, tree_structure(skeleton), targets);
  size_t pos = 0;
  return tree_replace_leaves(skeleton, leaves, pos);
}

/// Options of CheckpointManager (orbax.checkpoint.CheckpointManagerOptions).
struct ManagerOptions {
  /// Keep at most this many checkpoints, deleting the oldest after a save; 0 keeps all.
  int max_to_keep = 0;
  /// save(step, ...) writes only when step is a multiple of this (1: every step).
  int64_t save_interval_steps = 1;
  /// Save asynchronously (SaveOptions::async).
  bool async = false;
};

/// Numbered checkpoints in one directory (orbax.checkpoint.CheckpointManager): step s is the
/// file `<dir>/ckpt_<s>.h5`. Unfinished saves (temporary files of a crashed job) are removed
/// by the next save. Collective like the functions above.
class TESSEL_API CheckpointManager {
 public:
  /// Creates `dir` if needed. A ValueError for max_to_keep < 0 or save_interval_steps < 1.
  explicit CheckpointManager(std::string dir, ManagerOptions options = {});
  /// Waits for a pending asynchronous save.
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  /// Saves `tree` as step `step` when the step is due (save_interval_steps) and returns true,
  /// else returns false. A ValueError when step is negative or already saved.
  template <class T> bool save(int64_t step, const T& tree, std::string metadata_json = {}) {
    if (!should_save(step)) return false;
    save_leaves_at(step, tree_structure(tree), tree_leaves(tree), std::move(metadata_json));
    return true;
  }
  /// Restores step `step` into a tree shaped like `target` (see checkpoints::restore). A
  /// ValueError listing the saved steps when it does not exist.
  template <class T> T restore(int64_t step, const T& target) const {
    return checkpoints::restore(checked_path(step), target);
  }
  /// True when save(step, ...) would write (the interval divides step, and it is new).
  bool should_save(int64_t step) const;
  /// The newest committed step, or -1 when there is none.
  int64_t latest_step() const;
  /// Every committed step, ascending.
  std::vector<int64_t> all_steps() const;
  /// The file of step `step` (whether or not it exists).
  std::string path(int64_t step) const;
  /// Waits for this process's pending asynchronous saves (checkpoints::wait_until_finished).
  void wait_until_finished();
  const std::string& directory() const { return dir_; }

 private:
  void save_leaves_at(int64_t step, const std::string& structure, const std::vector<Array>& leaves,
                      std::string metadata_json);
  std::string checked_path(int64_t step) const;
  std::string dir_;
  ManagerOptions options_;
};

}  // namespace tessel::checkpoints
