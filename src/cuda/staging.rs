//! Host-side staging copies: the valid rows of a plane packed into pinned memory, in
//! parallel bands on a process-wide pool of its own (one thread copies at ~6-10 GB/s, short of
//! what an upload takes; issue 6's measurements in docs/perf/NOTES.md).

use std::sync::OnceLock;

use rayon::prelude::*;

/// Bytes of staging one parallel task copies at least: below this a band costs more to hand
/// to a thread than to copy (a 576x324 8-bit plane stays on one thread).
const MIN_BAND_BYTES: usize = 64 * 1024;

/// Bands per plane for each thread of the staging pool: two, so that a slow thread delays
/// only half a share. With 512 KiB bands a 1080p plane had only 4 or 8 bands, which made the
/// 10-bit system-memory path 1.57x slower than 8-bit on the H100 while the GPU waited
/// (issue 6, docs/perf/NOTES.md).
const BANDS_PER_THREAD: usize = 2;

/// Most threads the staging copy uses. Each thread copies at a few GB/s, so the copy keeps
/// gaining up to the core count: on the 16-core GPU host, 8 threads took 2160p 10-bit from
/// about 1,050 down to about 750 fps (issue 6, docs/perf/NOTES.md).
const MAX_STAGING_THREADS: usize = 32;

/// The process-wide thread pool of the staging copies (all elements share it), made on first
/// use with `min(available_parallelism, MAX_STAGING_THREADS)` threads; `None` when it cannot
/// be made (the copies then run on the calling thread). A pool of its own keeps the copies
/// off an application's rayon global pool.
fn staging_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_STAGING_THREADS);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("vmafcompare-stage-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs `jobs` beside each other and returns the first error in job order: the first job on
/// the calling thread, the others on the staging pool (all on the calling thread when there
/// is no pool or one job). A ladder's kernel launches use it
/// (`CudaBackend::enqueue_ladder`): a thread launches only so many kernels a second.
pub fn run_beside<'s, E: Send>(
    jobs: Vec<Box<dyn FnOnce() -> Result<(), E> + Send + 's>>,
) -> Result<(), E> {
    let mut results: Vec<Option<Result<(), E>>> = jobs.iter().map(|_| None).collect();
    match staging_pool() {
        Some(pool) if jobs.len() > 1 => pool.in_place_scope(|scope| {
            let mut pending = jobs.into_iter().zip(results.iter_mut());
            let first = pending.next();
            for (job, result) in pending {
                scope.spawn(move |_| *result = Some(job()));
            }
            if let Some((job, result)) = first {
                *result = Some(job());
            }
        }),
        _ => {
            for (job, result) in jobs.into_iter().zip(results.iter_mut()) {
                *result = Some(job());
            }
        }
    }
    results.into_iter().flatten().collect()
}

/// Splits the first `rows * row` bytes of `dst` into bands of whole rows, about
/// `BANDS_PER_THREAD` per thread of `staging_pool` and at least `MIN_BAND_BYTES` each,
/// and runs `fill(first_row, band, row)` on each, in parallel. Returns
/// the bytes covered, or 0 (nothing done) when `dst` is shorter.
pub fn in_bands(
    dst: &mut [u8],
    row: usize,
    rows: usize,
    fill: impl Fn(usize, &mut [u8], usize) + Sync,
) -> usize {
    let total = row * rows;
    let Some(dst) = dst.get_mut(..total) else {
        return 0;
    };
    let pool = staging_pool();
    let threads = pool.map_or(1, |p| p.current_num_threads()).max(1);
    let band_bytes = (total / (threads * BANDS_PER_THREAD)).max(MIN_BAND_BYTES);
    let band = (band_bytes / row.max(1)).max(1);
    let chunk = row.max(1) * band;
    match pool {
        Some(p) if total > chunk => p.install(|| {
            dst.par_chunks_mut(chunk)
                .enumerate()
                .for_each(|(b, c)| fill(b * band, c, row))
        }),
        // One band, or no pool: on this thread.
        _ => dst
            .chunks_mut(chunk)
            .enumerate()
            .for_each(|(b, c)| fill(b * band, c, row)),
    }
    total
}

/// Copies the first `row` bytes of each of `rows` rows of `src` (`stride` bytes apart) into
/// `dst`, packed, in parallel bands ([`in_bands`]); one copy per band when the rows are
/// contiguous. Rows that `src` does not hold are left as they are. Returns the bytes covered,
/// or 0 (nothing done) when `dst` is shorter than `row * rows`.
pub fn stage_rows(src: &[u8], stride: usize, row: usize, rows: usize, dst: &mut [u8]) -> usize {
    in_bands(dst, row, rows, |first, band, row| {
        if stride == row {
            let start = first * row;
            if let Some(s) = src.get(start..start + band.len()) {
                band.copy_from_slice(s);
            }
            return;
        }
        for (i, out) in band.chunks_exact_mut(row).enumerate() {
            let start = (first + i) * stride;
            if let Some(s) = src.get(start..start + row) {
                out.copy_from_slice(s);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every job runs once, each on its own data, whichever thread takes it.
    #[test]
    fn run_beside_runs_every_job_once() {
        let mut slots = vec![0u64; 37];
        let jobs: Vec<Box<dyn FnOnce() -> Result<(), String> + Send + '_>> = slots
            .iter_mut()
            .enumerate()
            .map(|(i, slot)| {
                Box::new(move || {
                    *slot += (i as u64 + 1) * 3;
                    Ok(())
                }) as Box<dyn FnOnce() -> Result<(), String> + Send + '_>
            })
            .collect();
        assert_eq!(run_beside(jobs), Ok(()));
        let expected: Vec<u64> = (0..37).map(|i| (i + 1) * 3).collect();
        assert_eq!(slots, expected);
    }

    /// The first error in job order is returned (not the first to happen), and the other
    /// jobs still run.
    #[test]
    fn run_beside_returns_the_first_error_in_job_order() {
        let ran = std::sync::atomic::AtomicUsize::new(0);
        let jobs: Vec<Box<dyn FnOnce() -> Result<(), String> + Send + '_>> = (0..8)
            .map(|i| {
                let ran = &ran;
                Box::new(move || {
                    ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if i == 0 {
                        // The job-order-first failure, made to finish last.
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                    if i % 3 == 0 {
                        Err(format!("job {i}"))
                    } else {
                        Ok(())
                    }
                }) as Box<dyn FnOnce() -> Result<(), String> + Send + '_>
            })
            .collect();
        assert_eq!(run_beside(jobs), Err("job 0".to_owned()));
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 8);
        // No jobs, one job: nothing to hand to the pool.
        assert_eq!(run_beside::<String>(Vec::new()), Ok(()));
        assert_eq!(
            run_beside(vec![
                Box::new(|| Err::<(), _>("only".to_owned())) as Box<dyn FnOnce() -> _ + Send>
            ]),
            Err("only".to_owned())
        );
    }
}
