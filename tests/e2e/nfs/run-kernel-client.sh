#!/usr/bin/env bash
# run-kernel-client.sh HOST_PORT GUEST_SCRIPT
#
# The project's copy of ../shared/kclient/run-kernel-client.sh, extended for
# NFSv3: the nfsv3 module is in the initramfs too, and KCLIENT_OPTS with
# vers=3 mounts `-t nfs` with the kernel's text options
# (vers=3,proto=tcp,port=P,mountport=P,mountproto=tcp,nolock,addr=,mountaddr=)
# through a small static mount(2) helper, KCLIENT_FILES/mountnfs
# (tests/e2e/nfs/mountnfs.c), because busybox's own NFS mount code speaks
# the MOUNT protocol itself and wants a portmapper.  Its base initramfs is
# cached under its own name, beside the shared script's.
#
# Boot Debian's own kernel (linux-image-amd64) under qemu-system-x86_64 with a
# tiny busybox initramfs, mount an NFS server listening on the HOST's
# 127.0.0.1:HOST_PORT with the real Linux kernel NFS client, run GUEST_SCRIPT
# (a busybox-sh script) inside the guest with cwd = the mount point, and exit
# with the guest script's exit status.
#
# Networking: qemu user-mode (slirp) only. The guest has 10.0.2.15/24 and NO
# default route; it talks only to 10.0.2.2, which slirp maps to the host's
# 127.0.0.1. No tap/bridge, nothing else is targeted.
#
# Only Debian packages are used: qemu-system-x86, busybox-static, and the
# linux-image-*-amd64 .deb (fetched with `apt-get download` and unpacked with
# `dpkg -x` into the cache dir; the host's kernel/boot setup is not touched).
#
# Environment knobs (all optional):
#   KCLIENT_CACHE     cache dir for kernel + base initramfs (default /tmp/kclient-cache)
#   KCLIENT_EXPORT    server path to mount                  (default /)
#   KCLIENT_OPTS      NFS mount options                     (default vers=4.1)
#                     (port=, proto=tcp, addr= are added automatically;
#                     vers=3 adds mountport=, mountproto=tcp, nolock too)
#   KCLIENT_MOUNTPORT vers=3: the MOUNT server's port        (default HOST_PORT)
#   KCLIENT_TIMEOUT   wall-clock limit for the whole VM, s  (default 600)
#   KCLIENT_MEM       guest RAM in MiB                      (default 512)
#   KCLIENT_ACCEL     qemu -accel list, e.g. "kvm tcg"      (default: kvm if usable, else tcg)
#   KCLIENT_LOGDIR    keep console/output logs here         (default: temp dir, removed)
#   KCLIENT_VERBOSE=1 print timings + kernel console tail on stderr
#   KCLIENT_FILES     host dir copied into the guest as /kclient-files (e.g. static test binaries)
#   KCLIENT_APPEND    extra kernel command line (e.g. "loglevel=7" to see boot messages)
#   KCLIENT_PVH=0     boot the compressed vmlinuz instead of the cached PVH vmlinux (+~2.5 s)
#   KCLIENT_KPKG      kernel package to use (default: what linux-image-amd64 depends on)
#   KCLIENT_REBUILD=1 force rebuilding the base initramfs
#
# Inside the guest the script sees: cwd=/mnt (the NFS mount), $KCLIENT_MNT=/mnt,
# $KCLIENT_SERVER=10.0.2.2, $KCLIENT_PORT, $KCLIENT_FILES=/kclient-files, and only
# busybox applets (+ whatever static binaries you ship via KCLIENT_FILES).
# The mount is "hard": if the server dies mid-run the guest blocks until KCLIENT_TIMEOUT.
# The script's stdout+stderr are streamed back and printed on this stdout.
#
# Exit status: the guest script's status; 90 = NFS mount failed in the guest;
# 91 = guest never reported (kernel panic, crash); 124 = timeout; 2 = usage/setup.
set -euo pipefail

STAMP_VERSION=loligo-1   # bump when the base initramfs layout/init changes

die() { echo "run-kernel-client: $*" >&2; exit 2; }
vlog() { [[ "${KCLIENT_VERBOSE:-0}" == 1 ]] && echo "run-kernel-client: $*" >&2 || true; }

[[ $# -eq 2 ]] || die "usage: $0 HOST_PORT GUEST_SCRIPT"
PORT=$1; GUEST_SCRIPT=$2
[[ "$PORT" =~ ^[0-9]+$ ]] && (( PORT > 0 && PORT < 65536 )) || die "bad port: $PORT"
[[ -r "$GUEST_SCRIPT" ]] || die "cannot read guest script: $GUEST_SCRIPT"

CACHE=${KCLIENT_CACHE:-/tmp/kclient-cache}
EXPORT=${KCLIENT_EXPORT:-/}
OPTS=${KCLIENT_OPTS:-vers=4.1}
MOUNTPORT=${KCLIENT_MOUNTPORT:-$PORT}
case ",$OPTS," in
  *,vers=3,*|*,nfsvers=3,*)
    [[ -x "${KCLIENT_FILES:-}/mountnfs" ]] ||
      die "vers=3 needs the mount(2) helper as KCLIENT_FILES/mountnfs (cc -static tests/e2e/nfs/mountnfs.c)" ;;
esac
TIMEOUT=${KCLIENT_TIMEOUT:-600}
MEM=${KCLIENT_MEM:-512}
mkdir -p "$CACHE"

# ---------------------------------------------------------------- host tools
need_pkgs=()
command -v qemu-system-x86_64 >/dev/null || need_pkgs+=(qemu-system-x86)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' \
  || need_pkgs+=(busybox-static)
if ((${#need_pkgs[@]})); then
  [[ $(id -u) == 0 ]] || die "missing packages: ${need_pkgs[*]} (need root to install)"
  for _ in $(seq 1 30); do
    if DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_pkgs[@]}" \
        >"$CACHE/apt-install.log" 2>&1; then break; fi
    grep -qi 'lock' "$CACHE/apt-install.log" || { cat "$CACHE/apt-install.log" >&2; die "apt-get install failed"; }
    sleep 20
  done
fi
BB=/bin/busybox
[[ -x $BB ]] || die "$BB missing (install busybox-static)"

# ------------------------------------------------------------- kernel (.deb)
exec 9>"$CACHE/.lock"; flock 9      # serialize cache building between concurrent runs
KROOT=$CACHE/kroot
if [[ ! -f $KROOT/.done ]]; then
  KPKG=${KCLIENT_KPKG:-$(apt-cache depends linux-image-amd64 2>/dev/null \
        | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
  [[ -n "$KPKG" ]] || die "cannot resolve kernel package from linux-image-amd64"
  vlog "fetching $KPKG"
  rm -rf "$KROOT" "$CACHE"/dl; mkdir -p "$CACHE/dl"
  (cd "$CACHE/dl" && apt-get download "$KPKG" >/dev/null 2>"$CACHE/dl/err.log") \
    || { cat "$CACHE/dl/err.log" >&2; die "apt-get download $KPKG failed"; }
  dpkg -x "$CACHE"/dl/*.deb "$KROOT"
  rm -rf "$CACHE/dl"
  touch "$KROOT/.done"
fi
KVER=$(ls "$KROOT/lib/modules" | head -1)
VMLINUZ=$KROOT/boot/vmlinuz-$KVER
MODDIR=$KROOT/lib/modules/$KVER
[[ -f $VMLINUZ && -d $MODDIR ]] || die "bad kernel tree in $KROOT"
# Under TCG, decompressing the xz bzImage costs ~2.5 s per boot. If the kernel
# supports PVH, cache the uncompressed ELF vmlinux once; qemu boots it directly.
KERNEL=$VMLINUZ
if [[ "${KCLIENT_PVH:-1}" == 1 ]] && grep -q '^CONFIG_PVH=y' "$KROOT/boot/config-$KVER" 2>/dev/null \
   && command -v xz >/dev/null; then
  VMLINUX=$CACHE/vmlinux-$KVER
  if [[ ! -s $VMLINUX ]]; then
    off=$(LC_ALL=C grep -abo $'\xfd7zXZ\x00' "$VMLINUZ" | head -1 | cut -d: -f1 || true)
    if [[ -n "$off" ]]; then
      # xz exits non-zero on the trailing bytes after the stream; check the ELF magic instead
      tail -c +$((off + 1)) "$VMLINUZ" | xz -dc > "$VMLINUX.tmp" 2>/dev/null || true
      if [[ "$(head -c 4 "$VMLINUX.tmp" | od -An -tx1 | tr -d ' ')" == 7f454c46 ]]; then
        mv "$VMLINUX.tmp" "$VMLINUX"
      else rm -f "$VMLINUX.tmp"; fi
    fi
  fi
  [[ -s $VMLINUX ]] && KERNEL=$VMLINUX
fi

# ------------------------------------------------------- base initramfs
BASE=$CACHE/base-loligo-$KVER.cpio.gz
STAMPF=$CACHE/base-loligo-$KVER.stamp
if [[ "${KCLIENT_REBUILD:-0}" == 1 || ! -f $BASE || "$(cat "$STAMPF" 2>/dev/null)" != "$STAMP_VERSION" ]]; then
  vlog "building base initramfs for $KVER"
  # module name -> relative path
  declare -A MODPATH=() SEEN=()
  while IFS= read -r p; do n=$(basename "$p" .ko); MODPATH[${n//-/_}]=$p; done \
    < <(cd "$MODDIR" && find kernel -name '*.ko')
  ORDER=()
  resolve() {
    local m=${1//-/_} p deps d
    [[ -n "${SEEN[$m]:-}" ]] && return 0
    SEEN[$m]=1
    p=${MODPATH[$m]:-}
    if [[ -z $p ]]; then
      grep -q "/${m}.ko\$" "$MODDIR/modules.builtin" 2>/dev/null && return 0
      die "module $m not found"
    fi
    deps=$(tr '\0' '\n' < "$MODDIR/$p" | grep -a -m1 '^depends=' | cut -d= -f2 || true)
    for d in ${deps//,/ }; do resolve "$d"; done
    ORDER+=("$m")
  }
  for m in virtio_pci virtio_net nfsv4 nfsv3; do resolve "$m"; done

  STAGE=$(mktemp -d "$CACHE/stage.XXXXXX")
  mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,mnt,tmp,etc,lib/modules/"$KVER"}
  cp "$BB" "$STAGE/bin/busybox"
  for a in $("$BB" --list-full); do
    [[ $a == bin/busybox ]] && continue
    ln -sf /bin/busybox "$STAGE/$a"
  done
  : > "$STAGE/etc/modules.order"
  for m in "${ORDER[@]}"; do
    p=${MODPATH[$m]}
    mkdir -p "$STAGE/lib/modules/$KVER/$(dirname "$p")"
    cp "$MODDIR/$p" "$STAGE/lib/modules/$KVER/$p"
    echo "/lib/modules/$KVER/$p" >> "$STAGE/etc/modules.order"
  done
  echo "root:x:0:0:root:/root:/bin/sh" > "$STAGE/etc/passwd"
  echo "root:x:0:" > "$STAGE/etc/group"
  cat > "$STAGE/init" <<'INIT'
#!/bin/sh
# kclient guest init (busybox). Talks to the host only via /dev/ttyS1 (output)
# and NFS to 10.0.2.2 (slirp -> host 127.0.0.1).
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /tmp; mount -t tmpfs tmp /tmp
. /kclient.env
O=/dev/ttyS1
stty -F $O raw -echo 2>/dev/null
up() { cut -d' ' -f1 /proc/uptime; }
mark() { echo "@@KCLIENT $*" > $O; }
finish() { mark "EXIT=$1"; sync; poweroff -f; }
mark "T_INIT=$(up)"
hostname "kclient-$KCLIENT_UNIQ"
while read -r ko; do
  case "$ko" in
    */nfs.ko) insmod "$ko" nfs4_unique_id="$KCLIENT_UNIQ" || mark "INSMOD_FAIL=$ko" ;;
    *) insmod "$ko" || mark "INSMOD_FAIL=$ko" ;;
  esac
  mark "T_MOD_${ko##*/}=$(up)"
done < /etc/modules.order
mark "T_MODS=$(up)"
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
# deliberately no default route: only 10.0.2.0/24 (slirp) is reachable
mark "T_NET=$(up)"
export KCLIENT_MNT=/mnt KCLIENT_SERVER=10.0.2.2 KCLIENT_PORT KCLIENT_MOUNTPORT KCLIENT_FILES=/kclient-files
case ",$KCLIENT_OPTS," in
  *,vers=3,*|*,nfsvers=3,*)
    # the kernel's own text options: it talks MOUNT itself on mountport
    /kclient-files/mountnfs "10.0.2.2:$KCLIENT_EXPORT" /mnt \
      "$KCLIENT_OPTS,proto=tcp,port=$KCLIENT_PORT,mountport=$KCLIENT_MOUNTPORT,mountproto=tcp,nolock,addr=10.0.2.2,mountaddr=10.0.2.2" > $O 2>&1 ;;
  *) mount -t nfs4 -o "$KCLIENT_OPTS,port=$KCLIENT_PORT,proto=tcp" "10.0.2.2:$KCLIENT_EXPORT" /mnt > $O 2>&1 ;;
esac
if [ $? != 0 ]; then
  mark "MOUNT_FAILED"
  dmesg | tail -30
  finish 90
fi
mark "T_MOUNT=$(up)"
grep ' /mnt ' /proc/mounts | sed 's/^/@@KCLIENT MOUNTINFO=/' > $O
cd /mnt
sh /guest.sh < /dev/null > $O 2>&1
rc=$?
cd /
mark "T_SCRIPT=$(up)"
umount /mnt > $O 2>&1 || { mark "UMOUNT_FAILED"; umount -l /mnt; }
mark "T_UMOUNT=$(up)"
finish $rc
INIT
  chmod 755 "$STAGE/init"
  (cd "$STAGE" && find . | LC_ALL=C sort | "$BB" cpio -o -H newc -R 0:0 2>/dev/null | gzip -6) > "$BASE.tmp"
  mv "$BASE.tmp" "$BASE"
  echo "$STAMP_VERSION" > "$STAMPF"
  rm -rf "$STAGE"
fi
flock -u 9

# ------------------------------------------------------------- per-run part
RUN=$(mktemp -d "${TMPDIR:-/tmp}/kclient-run.XXXXXX")
QPID=
cleanup() {
  [[ -n "$QPID" ]] && kill "$QPID" 2>/dev/null || true
  if [[ -n "${KCLIENT_LOGDIR:-}" ]]; then mkdir -p "$KCLIENT_LOGDIR"; cp -f "$RUN"/console.log "$RUN"/out.log "$KCLIENT_LOGDIR"/ 2>/dev/null || true; fi
  rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

UNIQ=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
mkdir -p "$RUN/extra"
cp "$GUEST_SCRIPT" "$RUN/extra/guest.sh"; chmod 755 "$RUN/extra/guest.sh"
if [[ -n "${KCLIENT_FILES:-}" ]]; then
  [[ -d $KCLIENT_FILES ]] || die "KCLIENT_FILES is not a directory: $KCLIENT_FILES"
  cp -a "$KCLIENT_FILES" "$RUN/extra/kclient-files"
fi
q() { printf "%q" "$1"; }
{
  echo "KCLIENT_PORT=$(q "$PORT")"
  echo "KCLIENT_EXPORT=$(q "$EXPORT")"
  echo "KCLIENT_OPTS=$(q "$OPTS")"
  echo "KCLIENT_MOUNTPORT=$(q "$MOUNTPORT")"
  echo "KCLIENT_UNIQ=$UNIQ"
} > "$RUN/extra/kclient.env"
# second (gzip'd) cpio member appended to the cached one; the kernel unpacks both
(cd "$RUN/extra" && find . | LC_ALL=C sort | "$BB" cpio -o -H newc -R 0:0 2>/dev/null | gzip -1) > "$RUN/extra.cpio.gz"
cat "$BASE" "$RUN/extra.cpio.gz" > "$RUN/initrd"

# accelerator: KVM only if it can actually create a VM here, else TCG
if [[ -n "${KCLIENT_ACCEL:-}" ]]; then ACCEL=($KCLIENT_ACCEL)
elif [[ -w /dev/kvm ]] && grep -qE '\b(vmx|svm)\b' /proc/cpuinfo; then ACCEL=(kvm tcg)
else ACCEL=(tcg); fi
ACCEL_ARGS=(); for a in "${ACCEL[@]}"; do ACCEL_ARGS+=(-accel "$a"); done
CPU=(); [[ ${ACCEL[0]} == kvm ]] && CPU=(-cpu host)

: > "$RUN/console.log"; : > "$RUN/out.log"
t0=$(date +%s.%N)
vlog "booting $KVER ($(basename "$KERNEL"), accel ${ACCEL[*]}) -> 10.0.2.2:$PORT$EXPORT opts=$OPTS"
timeout --kill-after=5 "$TIMEOUT" qemu-system-x86_64 \
  "${ACCEL_ARGS[@]}" "${CPU[@]}" -m "$MEM" -smp 1 \
  -nodefaults -no-user-config -display none \
  -kernel "$KERNEL" -initrd "$RUN/initrd" \
  -append "console=ttyS0 quiet loglevel=4 panic=-1 oops=panic mitigations=off tsc=reliable ${KCLIENT_APPEND:-}" \
  -netdev user,id=n0,ipv6=off -device virtio-net-pci,netdev=n0,romfile= \
  -serial "file:$RUN/console.log" -serial "file:$RUN/out.log" \
  -monitor none -no-reboot </dev/null >"$RUN/qemu.log" 2>&1 &
QPID=$!
# stream guest output while it runs
tail -n +1 -s 0.1 -F --pid=$QPID "$RUN/out.log" 2>/dev/null | sed -u -e 's/\r$//' -e '/^@@KCLIENT /d' -e 's/@@KCLIENT .*$//' &
TPID=$!
set +e; wait $QPID; qrc=$?; set -e; QPID=
wait $TPID 2>/dev/null || true
t1=$(date +%s.%N)

tr -d '\r' < "$RUN/out.log" > "$RUN/out.clean"
# marks start a line, except after guest output that lacked a final newline
marks=$(grep -o '@@KCLIENT .*' "$RUN/out.clean" || true)
if [[ "${KCLIENT_VERBOSE:-0}" == 1 ]]; then
  echo "$marks" | sed 's/^@@KCLIENT /  guest: /' >&2
  echo "  host: qemu rc=$qrc wall=$(awk "BEGIN{printf \"%.1f\", $t1-$t0}")s" >&2
fi
rc=$(echo "$marks" | sed -n 's/^@@KCLIENT EXIT=\([0-9]\{1,3\}\)$/\1/p' | tail -1)
if [[ -z "$rc" ]]; then
  if [[ $qrc == 124 || $qrc == 137 ]]; then echo "run-kernel-client: timeout after ${TIMEOUT}s" >&2; rc=124
  else echo "run-kernel-client: guest did not report an exit status (qemu rc=$qrc)" >&2; rc=91; fi
  echo "---- kernel console (tail) ----" >&2; tr -d '\r' < "$RUN/console.log" | tail -40 >&2
  cat "$RUN/qemu.log" >&2
elif [[ $rc == 90 ]]; then
  echo "run-kernel-client: NFS mount of 10.0.2.2:$EXPORT (host 127.0.0.1:$PORT) failed in guest" >&2
  tr -d '\r' < "$RUN/console.log" | tail -20 >&2
fi
exit "$rc"
