#!/usr/bin/env bash
# Man pages from the CLI's own help (help2man): fairgpu.1 and one page per
# subcommand, fairgpu-SUB.1 (as git's), each naming the others under SEE
# ALSO. CMake runs it after building the program (the `man` target);
# usage: scripts/make-man.sh FAIRGPU_BINARY OUT_DIR
set -euo pipefail
bin=$(realpath "$1")
out=$2
mkdir -p "$out/bin"
# help2man runs a program with --help and --version; a subcommand's is
# reached through a link named fairgpu-SUB to this wrapper, which reads SUB
# from its own name.
cat >"$out/bin/wrapper" <<WRAP
#!/bin/sh
sub=\${0##*/fairgpu-}
# "fairgpu-SUB VERSION": help2man names the page after the first word.
[ "\$1" = --version ] && { "$bin" --version | sed "s/^fairgpu /fairgpu-\$sub /"; exit; }
exec "$bin" "\$sub" "\$@"
WRAP
chmod +x "$out/bin/wrapper"
# Subcommands: the names under "Subcommands:" of `fairgpu --help`.
# (The help is read once: awk stopping early on a pipe from the program would
# kill it with SIGPIPE, which pipefail turns into a failure.)
help=$("$bin" --help)
subs=$(awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}' <<<"$help")
see_also=$(printf '.BR fairgpu (1)'; for s in $subs; do printf ',\n.BR fairgpu-%s (1)' "$s"; done)
printf '[SEE ALSO]\n%s\n.PP\nThe operator guide: /usr/share/doc/fairgpu/docs/operator-guide.md\n' \
  "$see_also" >"$out/see-also.h2m"
common=(--no-info --no-discard-stderr --section=1 --source="fairgpu" --include="$out/see-also.h2m")
help2man "${common[@]}" --name="fair scheduler for shared heterogeneous GPU clusters" \
  --output="$out/fairgpu.1" "$bin"
for s in $subs; do
  ln -sf wrapper "$out/bin/fairgpu-$s"
  # The subcommand's one-line description from the program's own list.
  what=$(awk -v s="$s" '$1 == s {sub(/^ *[^ ]+ +/, ""); print; exit}' <<<"$help")
  help2man "${common[@]}" --name="${what%%:*}" --output="$out/fairgpu-$s.1" "$out/bin/fairgpu-$s"
done
