# Sourced by the bench scripts that read real traces: sets FAIRGPU_DATA to the
# folder holding them (gavel/, shockwave/, synergy/, alibaba-gpu-v2023/,
# philly_runtime.csv; where to get each: docs/researcher-guide.md, "Getting
# the real traces"). Takes `--data DIR` out of the script's arguments (kept in
# ARGS), else $FAIRGPU_DATA, else ../shared/data where that exists.
#
#   . bench/data_dir.sh; fairgpu_data_dir SUBDIR "$@"; set -- "${ARGS[@]}"
fairgpu_data_dir() {
  local need=$1
  shift
  ARGS=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --data) FAIRGPU_DATA=${2:?--data needs a folder}; shift 2 ;;
      --data=*) FAIRGPU_DATA=${1#--data=}; shift ;;
      *) ARGS+=("$1"); shift ;;
    esac
  done
  if [ -z "${FAIRGPU_DATA:-}" ] && [ -d ../shared/data ]; then FAIRGPU_DATA=../shared/data; fi
  if [ -z "${FAIRGPU_DATA:-}" ] || [ ! -e "$FAIRGPU_DATA/$need" ]; then
    echo "$(basename "$0"): no ${FAIRGPU_DATA:+$FAIRGPU_DATA/}$need: give the data folder with" \
      "--data DIR or FAIRGPU_DATA (see docs/researcher-guide.md, \"Getting the real traces\")" >&2
    exit 2
  fi
}
