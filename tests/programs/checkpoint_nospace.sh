#!/bin/sh
# Runs `checkpoint_crash nospace` on a 16 MiB tmpfs mounted in a private mount namespace (a
# real full file system, ENOSPC), which disappears with the namespace. Exits 77 (skipped)
# where no mount namespace or tmpfs can be made (not root). Usage: checkpoint_nospace.sh <program>
prog="$1"
if ! unshare -m true 2>/dev/null; then
  echo "checkpoint_nospace: cannot make a mount namespace here (root needed); skipped"
  exit 77
fi
mnt=$(mktemp -d)
unshare -m sh -c "mount -t tmpfs -o size=16m tessel-nospace '$mnt' || exit 77; exec '$prog' nospace '$mnt/ck'"
rc=$?
rmdir "$mnt" 2>/dev/null
[ "$rc" -eq 77 ] && echo "checkpoint_nospace: tmpfs could not be mounted; skipped"
exit "$rc"
