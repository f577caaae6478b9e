#!/usr/bin/env bash
# GPU host (see ../shared/gpu/README.md): runs, from the repo root, what scripts/gpu-stage.sh
# staged into .gpu/, and prints a table per check. Each check prints its own verdict; the
# script exits non-zero when one fails.
set -uo pipefail
cd "$(dirname "$0")/.."
# The binaries may travel compressed (the carry limit is 64 MiB): gpu-stage.sh PACK=1.
[[ -d .gpu/bin || ! -f .gpu/bin.tar.xz ]] || tar -xJf .gpu/bin.tar.xz -C .gpu
tar -xzf .gpu/gst-runtime.tar.gz -C /opt && source .gpu/gst-env.sh
export LD_LIBRARY_PATH=$PWD/.gpu/lib:$LD_LIBRARY_PATH
export VMAF_REFERENCE_DIR=$PWD/.gpu/ref VMAF_GPU_CLIPS=$PWD/.gpu/clips VMAFCOMPARE_REQUIRE_GPU=1
# Test binaries are built on a machine without a GPU, where the GPU tests are compiled as
# ignored (build.rs, cfg gpu_tests): every test binary here runs with --include-ignored.
out=${OUT:-/tmp}
fail=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
gst-inspect-1.0 vmafcompare >/dev/null || { echo "vmafcompare not found"; exit 1; }
checks=${CHECKS:-equal pipeline nvdec bframes range zerocopy dmabuf sanitizer cycles liveladder perf}
for c in $checks; do
  echo "=== $c"
  case $c in
    equal)  # (a) GPU and CPU scores bit for bit: backend level (every feature word, gains,
            # bit depths) and element level (reference pairs, the 1080p clips)
      .gpu/bin/gpu_check .gpu/ref 2>&1 | tail -16 || fail=1
      .gpu/bin/gpu --include-ignored --nocapture --test-threads=1 2>&1 | grep -E '^\||test result|panicked' || fail=1 ;;
    pipeline)  # (b) nvh264dec decoding two real 1080p H.264 files into vmafcompare
      for b in cuda cpu; do
        gst-launch-1.0 -q \
          filesrc location=.gpu/clips/ref_1080p.mp4 ! qtdemux ! h264parse ! nvh264dec ! cmp.reference \
          filesrc location=.gpu/clips/dist_1080p.mp4 ! qtdemux ! h264parse ! nvh264dec ! cmp.distorted \
          vmafcompare name=cmp backend=$b results-location="$out/nvdec_$b.json" ! fakesink || fail=1
      done
      python3 - "$out/nvdec_cuda.json" "$out/nvdec_cpu.json" <<'PY' || fail=1
import json, sys
g, c = (json.load(open(p)) for p in sys.argv[1:3])
same = g["frames"] == c["frames"]
print(f"nvh264dec 1080p: {len(g['frames'])} frames, pooled VMAF cuda {g['pooled_metrics']['vmaf']['mean']:.6f} cpu {c['pooled_metrics']['vmaf']['mean']:.6f}, per-frame logs identical: {same}")
sys.exit(0 if same else 1)
PY
      ;;
    zerocopy)  # nvh264dec into CUDA memory vs system memory (1080p, 2160p), cudaupload on one pad
      .gpu/bin/cuda_inputs .gpu/clips .gpu/ref || fail=1 ;;
    dmabuf)  # memfd DMABufs: import refused by the driver, read back; scores equal system memory
      .gpu/bin/dmabuf --include-ignored --nocapture --test-threads=1 2>&1 | grep -E 'DMABuf|map failure|test result|panicked' || fail=1 ;;
    sanitizer)  # compute-sanitizer on scoring runs (VMAF v0 and v1): CUDA memory from nvh264dec, and system memory
      for tool in memcheck racecheck initcheck synccheck; do
        for input in cuda system; do
          if [[ $input == cuda ]]; then
            src="filesrc location=.gpu/clips/ref_360p.mp4 ! qtdemux ! h264parse ! nvh264dec ! cmp.reference
                 filesrc location=.gpu/clips/dist_360p.mp4 ! qtdemux ! h264parse ! nvh264dec ! cmp.distorted"
          else
            src="filesrc location=.gpu/ref/src01_ref_576x324_420p8_3f.yuv ! rawvideoparse width=576 height=324 format=i420 ! cmp.reference
                 filesrc location=.gpu/ref/src01_dis_576x324_420p8_3f.yuv ! rawvideoparse width=576 height=324 format=i420 ! cmp.distorted"
          fi
          # shellcheck disable=SC2086
          res=$(compute-sanitizer --tool $tool --error-exitcode 9 gst-launch-1.0 -q $src \
            vmafcompare name=cmp backend=cuda model="vmaf_v0.6.1,vmaf_v1.0.16_hfr_3d0h_2160:name=v1" \
            ! fakesink 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | tr '\n' ' ')
          echo "| $tool | $input input | ${res:-no summary} |"
          [[ $res == *" 0 errors"* || $res == *" 0 hazards"* ]] || fail=1
        done
      done ;;
    cycles)  # state cycles with a resolution switch in each: device memory, RSS, handles, fds
      n=${CYCLES:-1000}
      .gpu/bin/gpu_cycles --cycles "$n" --mode null --switch || fail=1
      .gpu/bin/gpu_cycles --cycles "$n" --mode ready --switch | tail -1 || fail=1
      .gpu/bin/gpu_cycles --cycles "${CUDA_CYCLES:-200}" --mode null --input cuda | tail -1 || fail=1
      .gpu/bin/gpu_cycles --cycles "${V1_CYCLES:-100}" --mode null --switch --model vmaf_v1.0.16_3d0h | tail -1 || fail=1 ;;
    faults)  # fault injection at every CUDA init/allocation step (test hook cuda::fault)
      .gpu/bin/gpu_faults --include-ignored --nocapture --test-threads=1 2>&1 | grep -E '^\||steps injected|test result|panicked|assert' || fail=1 ;;
    oom)  # another user (this process, then a second process) holds almost all device memory
      .gpu/bin/gpu_oom || fail=1 ;;
    concurrency)  # 8 pipelines, 4 processes, two elements sharing a CUDA context: cpu and cuda
      .gpu/bin/concurrency --include-ignored --test-threads=1 2>&1 | grep -E 'test |test result|panicked|not checked' || fail=1 ;;
    suite)  # the CI suites that change behaviour with a GPU present (bad input, element)
      for t in bad_input element; do
        .gpu/bin/$t --include-ignored --test-threads=2 2>&1 | grep -E 'test result|panicked|FAILED|failed' || fail=1
      done ;;
    bench)  # speed from system and CUDA memory, device memory, latency, 10-bit cost, several
            # elements at once, against the CPU backend (examples/vmaf_bench.rs)
      .gpu/bin/vmaf_bench || fail=1 ;;
    perf)  # the bench, then the kernel profile below
      .gpu/bin/vmaf_bench || fail=1 ;&
    profile)  # Nsight Compute per kernel (durations, speed of light) over 6 frames at 1080p
              # 8-bit and 2160p 10-bit; reports as text in $out (docs/perf/ keeps copies)
      for cfg in "1920 1080 I420" "3840 2160 I420_10LE"; do
        read -r w h f <<<"$cfg"
        caps="video/x-raw,format=$f,width=$w,height=$h,framerate=30/1"
        ncu --clock-control none --section SpeedOfLight --print-summary per-kernel \
          gst-launch-1.0 -q videotestsrc num-buffers=6 pattern=snow ! "$caps" ! cmp.reference \
          videotestsrc num-buffers=6 pattern=ball ! "$caps" ! cmp.distorted \
          vmafcompare name=cmp backend=cuda frame-message=false ! fakesink > "$out/ncu_${h}p_$f.txt" 2>&1
        echo "ncu ${w}x${h} $f: $(grep -c . "$out/ncu_${h}p_$f.txt") lines -> ncu_${h}p_$f.txt"
      done ;;
    formats)  # issue 17: every format against its planar twin on the GPU (system, DMABuf and
              # CUDA memory), and nvh265dec's P010 CUDA memory on a real 10-bit HEVC pair
      .gpu/bin/formats --include-ignored --test-threads=1 --nocapture on_cuda nvh265dec 2>&1 \
        | grep -E '^\||test result|panicked|FAILED' || fail=1 ;;
    multigpu)  # issue 21, on a host with 2+ GPUs: pipelines spread over the GPUs, a decoder on
               # GPU 0 feeding vmafcompare device-id=1 (peer-to-peer path, logged), and state
               # cycles alternating devices with device memory checked on both; issue 33:
               # device-id=-1 (two elements on two GPUs, an upstream on device 1 wins)
      .gpu/bin/device_pick --include-ignored --test-threads=1 --nocapture 2>&1 \
        | grep -E 'GPU\(s\)|skipped|test result|panicked|FAILED' || fail=1
      .gpu/bin/vmaf_bench --multi-gpu --devices 0,1 --streams "${MULTI_STREAMS:-1,2,4,8}" \
        --seconds "${MULTI_SECONDS:-3}" || fail=1
      for route in "nvh264dec 0" "nvh264dec 1" "nvh264device1dec 1"; do
        read -r dec dev <<<"$route"
        GST_DEBUG=vmafcompare:4 gst-launch-1.0 -q \
          filesrc location=.gpu/clips/ref_1080p.mp4 ! qtdemux ! h264parse ! $dec ! cmp.reference \
          filesrc location=.gpu/clips/dist_1080p.mp4 ! qtdemux ! h264parse ! $dec ! cmp.distorted \
          vmafcompare name=cmp backend=cuda device-id=$dev results-location="$out/multi_${dec}_$dev.json" \
          ! fakesink 2>&1 | grep -oE '(reference|distorted): (CUDA memory|frames in CUDA).*' | sort -u || true
      done
      python3 - "$out"/multi_nvh264dec_0.json "$out"/multi_nvh264dec_1.json "$out"/multi_nvh264device1dec_1.json <<'PY' || fail=1
import json, sys
logs = [json.load(open(p)) for p in sys.argv[1:]]
names = ["nvh264dec (GPU 0) -> device-id=0", "nvh264dec (GPU 0) -> device-id=1", "nvh264device1dec (GPU 1) -> device-id=1"]
print("| route | frames | pooled VMAF | per-frame log identical to GPU 0 alone |")
print("| --- | --- | --- | --- |")
ok = True
for n, l in zip(names, logs):
    same = l["frames"] == logs[0]["frames"]
    ok &= same
    print(f"| {n} | {len(l['frames'])} | {l['pooled_metrics']['vmaf']['mean']:.6f} | {same} |")
sys.exit(0 if ok else 1)
PY
      .gpu/bin/gpu_cycles --cycles "${CYCLES:-100}" --mode null --devices 0,1 || fail=1 ;;
    extras)  # issue 8: the extra metrics and model lists on the GPU against the CPU, the
             # kernels against their CPU oracles, state cycles with every metric on, their cost
      for t in gpu_ssim gpu_ssimulacra2 extra_features "multi_model model_lists_on_cuda"; do
        # shellcheck disable=SC2086
        .gpu/bin/$t --include-ignored --test-threads=1 --nocapture 2>&1 \
          | grep -E '^\||test result|panicked|FAILED|cuda|max' || fail=1
      done
      .gpu/bin/gpu_cycles --cycles "${CYCLES:-100}" --mode null --switch \
        --features psnr,float_ssim,float_ms_ssim,ssimulacra2 || fail=1
      .gpu/bin/gpu_cycles --cycles "${CUDA_CYCLES:-20}" --mode null --input cuda \
        --features psnr,float_ssim,float_ms_ssim,ssimulacra2 | tail -1 || fail=1
      .gpu/bin/vmaf_bench --extras --sizes "${EXTRA_SIZES:-1920x1080,3840x2160}" \
        --depths "${EXTRA_DEPTHS:-8}" --repeat "${EXTRA_REPEAT:-3}" || fail=1 ;;
    metrics)  # issue 31: every libvmaf metric added (ciede, psnr_hvs, speed_temporal, float_vif,
              # float_adm, float_motion, float_psnr, float_ansnr, float_moment): each GPU half
              # against its CPU half and through the element, the GPU lessons with all of them
              # on (no per-frame allocation, fault injection at every allocation step, state
              # cycles, compute-sanitizer), then the speed tables; METRIC_PARTS picks among
              # "tests faults cycles sanitizer bench" (one device call each fits its time limit)
      new=ciede,psnr_hvs,speed_temporal,float_vif,float_adm,float_motion,float_psnr,float_ansnr,float_moment
      parts=${METRIC_PARTS:-tests faults cycles sanitizer bench}
      if [[ $parts == *tests* ]]; then
        for t in gpu_ciede gpu_float_simple gpu_psnr_hvs gpu_float_vif gpu_float_adm gpu_speed_temporal gpu_speed; do
          .gpu/bin/$t --include-ignored --test-threads=1 --nocapture 2>&1 \
            | grep -E '^\||test result|panicked|FAILED|max|fps' || fail=1
        done
        .gpu/bin/gpu_lessons --include-ignored --test-threads=1 --nocapture 2>&1 \
          | grep -E '^\||test result|panicked|FAILED' || fail=1
      fi
      if [[ $parts == *faults* ]]; then
        .gpu/bin/gpu_faults --include-ignored --nocapture --test-threads=1 extra_metric 2>&1 \
          | grep -E 'steps injected|test result|panicked|WRONG|FAILED' || fail=1
      fi
      if [[ $parts == *cycles* ]]; then
        .gpu/bin/gpu_cycles --cycles "${CYCLES:-100}" --mode null --switch --features "$new" | tail -3 || fail=1
      fi
      if [[ $parts == *sanitizer* ]]; then
        for tool in memcheck racecheck initcheck synccheck; do
          res=$(compute-sanitizer --tool $tool --error-exitcode 9 gst-launch-1.0 -q \
            filesrc location=.gpu/ref/src01_ref_576x324_420p8_3f.yuv ! rawvideoparse width=576 height=324 format=i420 ! cmp.reference \
            filesrc location=.gpu/ref/src01_dis_576x324_420p8_3f.yuv ! rawvideoparse width=576 height=324 format=i420 ! cmp.distorted \
            vmafcompare name=cmp backend=cuda model="vmaf_float_v0.6.1,vmaf_v0.6.1:name=i" features="$new" \
            ! fakesink 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | tr '\n' ' ')
          echo "| $tool | all new metrics, float + integer model | ${res:-no summary} |"
          [[ $res == *" 0 errors"* || $res == *" 0 hazards"* ]] || fail=1
        done
      fi
      if [[ $parts == *bench* ]]; then
        .gpu/bin/metric_bench --backends cuda --data .gpu/ref || fail=1
        .gpu/bin/metric_bench --backends cpu --data .gpu/ref --threads "${METRIC_THREADS:-1,16}" \
          --sizes "${METRIC_CPU_SIZES:-1080p}" --depths 8 \
          --libvmaf "${LIBVMAF:-.gpu/bin/libvmaf-vmaf}" || fail=1
      fi ;;
    soak)   # not in the default list: a live 1080p pipeline on the GPU for SOAK_SECONDS
            # (default 1500: a device session lasts 30 minutes), RSS and free device memory
            # every minute, index/timestamp drift (CHECKS=soak bash scripts/gpu-host.sh)
      .gpu/bin/soak --backend cuda --width 1920 --height 1080 --distortion scale \
        --duration "${SOAK_SECONDS:-1500}" --interval 60 || fail=1 ;;
    nvdec)  # issue 34: vmafnvdec's frames and scores against nvh264dec/nvh265dec's (the
            # speed table: scripts/decode-stage.sh here, scripts/decode-bench.sh there)
      .gpu/bin/nvdec --include-ignored --nocapture --test-threads=1 2>&1 \
        | grep -E '^test |frames|mean VMAF|test result|panicked' || fail=1 ;;
    bframes)  # issue 48: vmafnvdec's output PTS against nvcodec's for every B-frame clip and
              # container (the table), the parser callbacks recorded for tests/nvdec_frames.rs,
              # the seek, CRA, oracle and command checks of tests/nvdec.rs
      python3 scripts/nvdec-pts.py --clips .gpu/nvclips --decoders order,nvcodec,vmafnvdec \
        --events "$out/nvdec_events" > "$out/nvdec_pts.md"
      grep -A30 '| check' "$out/nvdec_pts.md"
      VMAF_NVDEC_CLIPS=$PWD/.gpu/nvclips VMAFCOMPARE_BIN=$PWD/.gpu/bin/vmafcompare \
        .gpu/bin/nvdec --include-ignored --nocapture --test-threads=1 bframe seek the_command 2>&1 \
        | grep -E '^\||^test |test result|panicked' || fail=1 ;;
    range)  # issue 49: full/limited cases on real files through vmafnvdec (nvcodec 1.22 drops the
            # range of streams without a colour description), CUDA and
            # CPU backends, against FFmpeg + libvmaf (scripts/range-check.py)
      python3 scripts/range-check.py --clips .gpu/rc --runs vmafnvdec:cuda,vmafnvdec:cpu || fail=1
      .gpu/bin/gpu_scale --include-ignored --nocapture 2>&1 | grep -E '^range|test result|panicked' || fail=1 ;;
    liveladder)  # issue 45: a live ladder (steady, 200 ms late and 1 s stalled renditions,
                 # auto-aligned, windowed and alerted each on its own) with backend=cuda against
                 # the CPU's non-live pairs, and a GPU fault mid-ladder under backend=auto: CPU
                 # failover with no frame lost
      if [[ -x .gpu/llf/ffmpeg ]] && bash scripts/live-ladder-files.sh host .gpu/llf .gpu/llf/ffmpeg; then
        VMAFCOMPARE_TEST_FILES=$PWD/.gpu/llf .gpu/bin/gpu_live_ladder --include-ignored --test-threads=1 --nocapture 2>&1 \
          | grep -E '^\| (rendition|steady|late|stall)|GPU scoring failed|test result|panicked|FAILED' || fail=1
      else
        echo "liveladder: no staged clips (.gpu/llf, scripts/gpu-stage.sh)"; fail=1
      fi ;;
    ladder)  # issue 30: a whole ladder in one element. The CUDA ladder backend against pair
             # backends and the CPU bit for bit (gpu_ladder); nvh264dec 1080p/720p/540p
             # renditions against the 1080p reference in one element (CUDA memory), backend=cuda
             # vs backend=cpu vs one element per rendition, per-frame logs; compute-sanitizer
             # memcheck on the ladder; the speed table (ladder_bench: one ladder element against
             # one element per rendition behind a tee, CUDA and system memory, v0 and v1; the
             # CPU backend at equal threads)
      .gpu/bin/gpu_ladder --include-ignored --test-threads=1 2>&1 | grep -E 'test result|panicked|FAILED' || fail=1
      nv() { echo "filesrc location=.gpu/clips/$1 ! qtdemux ! h264parse ! nvh264dec ! cmp.$2"; }
      lad() {  # backend model tag
        # shellcheck disable=SC2046
        gst-launch-1.0 -q $(nv ref_1080p.mp4 reference) $(nv dist_1080p.mp4 distorted) \
          $(nv dist_720p.mp4 distorted_1) $(nv dist_540p.mp4 distorted_2) \
          vmafcompare name=cmp backend=$1 model="$2" results-location="$out/lad_$3_$1_%s.json" \
          distorted::label=1080p distorted_1::label=720p distorted_2::label=540p ! fakesink \
          || { echo "ladder $3 $1 failed"; fail=1; }
      }
      for m in v0:vmaf_v0.6.1 v1:vmaf_v1.0.16_3d0h; do
        tag=${m%%:*} model=${m#*:}
        lad cuda "$model" "$tag"
        lad cpu "$model" "$tag"
        for r in 1080p 720p 540p; do
          # shellcheck disable=SC2046
          gst-launch-1.0 -q $(nv ref_1080p.mp4 reference) $(nv dist_$r.mp4 distorted) \
            vmafcompare name=cmp backend=cuda model="$model" results-location="$out/sep_${tag}_$r.json" ! fakesink \
            || { echo "separate $tag $r failed"; fail=1; }
        done
      done
      echo "| model | rendition | frames | pooled VMAF ladder cuda | ladder cpu | separate element | per-frame logs identical |"
      echo "| --- | --- | --- | --- | --- | --- | --- |"
      python3 - "$out" <<'PY' || fail=1
import json, sys
out, ok = sys.argv[1], True
for tag in ("v0", "v1"):
    for r in ("1080p", "720p", "540p"):
        g, c, s = (json.load(open(f"{out}/{p}.json")) for p in (f"lad_{tag}_cuda_{r}", f"lad_{tag}_cpu_{r}", f"sep_{tag}_{r}"))
        same = bool(g["frames"]) and g["frames"] == c["frames"] == s["frames"]
        ok &= same
        v = lambda j: j["pooled_metrics"]["vmaf"]["mean"]
        print(f"| {tag} | {r} | {len(g['frames'])} | {v(g):.6f} | {v(c):.6f} | {v(s):.6f} | {same} |")
sys.exit(0 if ok else 1)
PY
      # shellcheck disable=SC2046
      compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 gst-launch-1.0 -q \
        $(nv ref_360p.mp4 reference) $(nv dist_360p.mp4 distorted) $(nv dist_180p.mp4 distorted_1) \
        vmafcompare name=cmp backend=cuda model=vmaf_v1.0.16_3d0h ! fakesink 2>&1 | tail -3
      [[ ${PIPESTATUS[0]} == 0 ]] || { echo "memcheck on the ladder failed"; fail=1; }
      .gpu/bin/ladder_bench --backend cuda --memory cuda,system --frames ${LADDER_FRAMES:-600} || fail=1
      .gpu/bin/ladder_bench --backend cpu --memory system --frames ${LADDER_CPU_FRAMES:-60} \
        --threads "$(nproc)" || fail=1
      ;;
    renditions)  # issue 29: renditions of other sizes scaled on the GPU. The GPU scaler
                 # against the CPU's bit for bit; nvh264dec 720p and 540p renditions against the
                 # 1080p reference (CUDA memory, scaled in place), VMAF v0 and v1 (chroma
                 # scaled too), backend=cuda vs backend=cpu logs; 10-bit and 4:4:4 from system
                 # memory; compute-sanitizer memcheck on a scaled run; the speed table
      .gpu/bin/gpu_scale --include-ignored --nocapture --test-threads=1 2>&1 \
        | grep -E '^\||test result|panicked|FAILED' || fail=1
      .gpu/bin/scaling_input --include-ignored --test-threads=2 2>&1 | grep -E 'test result|panicked|FAILED' || fail=1
      rend() {  # name model reference-branch distorted-branch
        for b in cuda cpu; do
          # shellcheck disable=SC2086
          gst-launch-1.0 -q $3 $4 vmafcompare name=cmp backend=$b model="$2" \
            results-location="$out/rend_$1_$b.json" ! fakesink || { echo "rendition $1 $b failed"; fail=1; }
        done
        python3 - "$1" "$out/rend_$1_cuda.json" "$out/rend_$1_cpu.json" <<'PY' || fail=1
import json, sys
g, c = (json.load(open(p)) for p in sys.argv[2:4])
same = g["frames"] == c["frames"] and g["frames"]
print(f"| {sys.argv[1]} | {len(g['frames'])} | {g.get('distorted_scaling')} | {g['pooled_metrics']['vmaf']['mean']:.6f} | {c['pooled_metrics']['vmaf']['mean']:.6f} | {bool(same)} |")
sys.exit(0 if same else 1)
PY
      }
      echo "| case | frames | distorted scaling | pooled VMAF cuda | cpu | per-frame logs identical |"
      echo "| --- | --- | --- | --- | --- | --- |"
      nv() { echo "filesrc location=.gpu/clips/$1 ! qtdemux ! h264parse ! nvh264dec ! cmp.$2"; }
      for r in 720p 540p; do
        rend "nvh264dec ${r}->1080p v0" vmaf_v0.6.1 "$(nv ref_1080p.mp4 reference)" "$(nv dist_$r.mp4 distorted)"
        rend "nvh264dec ${r}->1080p v1" "vmaf_v1.0.16_3d0h" "$(nv ref_1080p.mp4 reference)" "$(nv dist_$r.mp4 distorted)"
      done
      raw() {  # file width height format(i420-10le|y444) pad: ffmpeg's rows are unpadded, so
               # the strides and offsets are given (GStreamer's defaults pad rows to 4 bytes)
        local w=$2 h=$3 b=1 cw=$2 ch=$3
        [[ $4 == i420-10le ]] && { b=2; cw=$(((w + 1) / 2)); ch=$(((h + 1) / 2)); }
        local y=$((w * h * b)) c=$((cw * ch * b))
        echo "filesrc location=.gpu/clips/$1 ! rawvideoparse width=$w height=$h format=$4 framerate=25/1 \
          plane-strides=<$((w * b)),$((cw * b)),$((cw * b))> plane-offsets=<0,$y,$((y + c))> \
          frame-size=$((y + 2 * c)) ! cmp.$5"
      }
      rend "system 10-bit 426x240->640x360 v0+psnr" "vmaf_v0.6.1" \
        "$(raw rend_ref_360p10.yuv 640 360 i420-10le reference)" "$(raw rend_dist_240p10.yuv 426 240 i420-10le distorted)"
      rend "system 10-bit 426x240->640x360 v1" "vmaf_v1.0.16_3d0h" \
        "$(raw rend_ref_360p10.yuv 640 360 i420-10le reference)" "$(raw rend_dist_240p10.yuv 426 240 i420-10le distorted)"
      rend "system 4:4:4 718x404->640x360 v1" "vmaf_v1.0.16_3d0h" \
        "$(raw rend_ref_360p444.yuv 640 360 y444 reference)" "$(raw rend_dist_404p444.yuv 718 404 y444 distorted)"
      # shellcheck disable=SC2046
      res=$(compute-sanitizer --tool memcheck --error-exitcode 9 gst-launch-1.0 -q \
        $(nv ref_360p.mp4 reference) $(nv dist_180p.mp4 distorted) \
        vmafcompare name=cmp backend=cuda model=vmaf_v1.0.16_3d0h ! fakesink 2>&1 | grep -E "ERROR SUMMARY" | tr '\n' ' ')
      echo "| memcheck | nvh264dec 320x180->640x360 v1 (CUDA memory scaled in place) | ${res:-no summary} |"
      [[ $res == *" 0 errors"* ]] || fail=1
      .gpu/bin/gpu_cycles --cycles "${CYCLES:-200}" --mode null --switch --rendition | tail -1 || fail=1
      .gpu/bin/gpu_cycles --cycles "${CUDA_CYCLES:-50}" --mode null --switch --rendition --input cuda \
        --model vmaf_v1.0.16_3d0h | tail -1 || fail=1
      .gpu/bin/vmaf_bench ${RENDITION_BENCH:---sizes 1920x1080 --depths 8,10 --renditions 1280x720,960x540 --seconds 3} || fail=1 ;;
    cpuvs)  # not in the default list (issue 33): the CPU backend against libvmaf's CLI, whole
            # process, from the same raw files, at 1-32 threads, 1080p and 2160p, 8 and 10 bits,
            # VMAF v0 and v1; PERF=/path/to/perf adds CPU seconds per frame (perf stat); each
            # cell the fastest of CPU_REPEAT runs per tool; runs of 48 frames per thread, 1080p
            # up to CPU_FRAMES frames, 2160p up to a quarter (runs of 96 frames at 16-32 threads
            # were mostly the fill and drain of 33-65 frames in flight); 1-8 threads alone took
            # 21 minutes on a 16-core host: split it with CPU_THREADS (and into calls of 10 minutes)
      python3 scripts/cpu-vs-libvmaf.py --libvmaf .gpu/bin/libvmaf-vmaf ${PERF:+--perf "$PERF"} \
        --reference .gpu/clips/ref_1080p.mp4 --distorted .gpu/clips/dist_1080p.mp4 \
        --reference2160 .gpu/clips/ref_2160p.mp4 --distorted2160 .gpu/clips/dist_2160p.mp4 \
        --repeat "${CPU_REPEAT:-3}" --frames "${CPU_FRAMES:-768}" \
        --threads "${CPU_THREADS:-1,2,4,8,16,32}" || fail=1 ;;
    cpu)    # not in the default list (issue 20): the CPU backend's fps at 1, 2, 4, 8 and all
            # threads, 1080p and 2160p, 8 and 10 bits, VMAF alone then with the extra metrics;
            # no ffmpeg here: the libvmaf columns and ratios come from the build machine
            # (CHECKS=cpu bash scripts/gpu-host.sh)
      .gpu/bin/cpu_bench --no-libvmaf --data .gpu/ref --threads "${CPU_THREADS:-1,2,4,8,all}" || fail=1
      .gpu/bin/cpu_bench --no-libvmaf --data .gpu/ref --threads "${CPU_THREADS:-1,2,4,8,all}" \
        --sizes 1080p --depths 8 --features psnr,float_ssim,float_ms_ssim || fail=1 ;;
  esac
done
exit $fail
