//! `device-id=-1`: the GPU an element opens when the application leaves the choice to it.
//!
//! The element first looks for the pipeline's CUDA context (its device wins, so that zero copy
//! still works; see the element's setup). When there is none it asks this module for the
//! least-loaded device: the fewest vmafcompare elements of this process holding it
//! ([`DeviceClaim`]), then the lowest GPU utilisation, then the most free memory, then the
//! lowest ordinal. Utilisation and free memory come from NVML, which reads every GPU without a
//! CUDA context on it (a context on each device only to ask `cuMemGetInfo` would cost memory
//! on GPUs the element does not use); CUDA ordinals are matched to NVML devices by PCI bus id,
//! since the two may number the GPUs differently. Where NVML is missing or fails, that
//! criterion is skipped.
//!
//! [`choose`] is the rule, over readings; [`claim_least_loaded`] gathers the readings and
//! claims the chosen device under one lock, so elements that start at the same moment in one
//! process spread over the GPUs.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};
use std::fmt;
use std::sync::{Mutex, MutexGuard, OnceLock};

use cudarc::driver::sys;
use nvml_wrapper::Nvml;

use super::{CudaError, GpuDevice};

/// What is known about one CUDA device when an element picks one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceReading {
    /// CUDA ordinal.
    pub ordinal: usize,
    /// vmafcompare elements of this process holding the device ([`DeviceClaim`]s).
    pub claims: usize,
    /// GPU utilisation in percent (NVML), `None` when unknown.
    pub utilisation: Option<u32>,
    /// Free device memory in bytes (NVML), `None` when unknown.
    pub free_bytes: Option<u64>,
}

/// The criterion that settled a choice among the devices the ones before it left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// There was one device.
    Only,
    /// Fewest vmafcompare elements.
    Claims,
    /// Lowest GPU utilisation (the devices tied on elements).
    Utilisation,
    /// Most free memory (tied on elements and utilisation, or utilisation unknown).
    FreeMemory,
    /// Lowest ordinal (tied on everything known).
    Ordinal,
}

/// The device [`choose`] picked, with its reading and what settled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The chosen device's reading.
    pub reading: DeviceReading,
    /// What settled the choice.
    pub decided: Decided,
    /// Criteria skipped while gathering (NVML missing or failing), for a debug log.
    pub notes: Vec<String>,
}

impl fmt::Display for Choice {
    /// `fewest vmafcompare elements: 0, then lowest GPU utilisation: 3%`, or `the only CUDA
    /// device`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.reading;
        if self.decided == Decided::Only {
            return f.write_str("the only CUDA device");
        }
        write!(f, "fewest vmafcompare elements: {}", r.claims)?;
        match self.decided {
            Decided::Only | Decided::Claims => Ok(()),
            Decided::Utilisation => write!(
                f,
                ", then lowest GPU utilisation: {}%",
                r.utilisation.unwrap_or(0)
            ),
            Decided::FreeMemory => write!(
                f,
                ", then most free memory: {} MiB",
                r.free_bytes.unwrap_or(0) >> 20
            ),
            Decided::Ordinal => f.write_str(", then the lowest ordinal"),
        }
    }
}

/// The least-loaded device of `readings`: fewest `claims`, then (among those tied) lowest
/// `utilisation`, then most `free_bytes`, then lowest ordinal. A criterion that is unknown
/// (`None`) for any device still in the running is skipped. `None` when `readings` is empty.
pub fn choose(readings: &[DeviceReading]) -> Option<Choice> {
    type Key = fn(&DeviceReading) -> Option<i128>;
    let mut left: Vec<&DeviceReading> = readings.iter().collect();
    if left.len() == 1 {
        return Some(Choice {
            reading: *left[0],
            decided: Decided::Only,
            notes: Vec::new(),
        });
    }
    // Smaller keys win.
    let criteria: [(Decided, Key); 3] = [
        (Decided::Claims, |r| Some(r.claims as i128)),
        (Decided::Utilisation, |r| r.utilisation.map(i128::from)),
        (Decided::FreeMemory, |r| {
            r.free_bytes.map(|b| -i128::from(b))
        }),
    ];
    let mut decided = Decided::Ordinal;
    for (criterion, key) in criteria {
        if left.len() < 2 {
            break;
        }
        let Some(keys) = left.iter().map(|r| key(r)).collect::<Option<Vec<_>>>() else {
            continue;
        };
        let Some(&best) = keys.iter().min() else {
            continue;
        };
        let before = left.len();
        left = left
            .into_iter()
            .zip(keys)
            .filter_map(|(r, k)| (k == best).then_some(r))
            .collect();
        if left.len() < before {
            decided = criterion;
        }
    }
    if left.len() > 1 {
        decided = Decided::Ordinal;
    }
    let reading = **left.iter().min_by_key(|r| r.ordinal)?;
    Some(Choice {
        reading,
        decided,
        notes: Vec::new(),
    })
}

/// vmafcompare elements of this process holding each device, by ordinal.
static CLAIMS: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

fn claims() -> MutexGuard<'static, BTreeMap<usize, usize>> {
    CLAIMS.lock().unwrap_or_else(|p| p.into_inner())
}

/// One element holding one device, counted process-wide while it lives (an element makes it
/// when it opens the device at NULL->READY and drops it at READY->NULL): the load that
/// [`claim_least_loaded`] compares first.
#[derive(Debug)]
pub struct DeviceClaim {
    ordinal: usize,
}

impl DeviceClaim {
    /// Counts one more holder of device `ordinal`.
    pub fn new(ordinal: usize) -> DeviceClaim {
        Self::add(&mut claims(), ordinal)
    }

    fn add(held: &mut BTreeMap<usize, usize>, ordinal: usize) -> DeviceClaim {
        *held.entry(ordinal).or_default() += 1;
        DeviceClaim { ordinal }
    }

    /// The claimed device's CUDA ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
}

impl Drop for DeviceClaim {
    fn drop(&mut self) {
        let mut held = claims();
        if let Some(n) = held.get_mut(&self.ordinal) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.ordinal);
            }
        }
    }
}

/// How many [`DeviceClaim`]s of device `ordinal` are alive in this process.
pub fn claims_on(ordinal: usize) -> usize {
    claims().get(&ordinal).copied().unwrap_or(0)
}

/// Picks the least-loaded CUDA device ([`choose`]) and claims it. NVML is asked only when
/// several devices tie on elements; no CUDA context is made on any device.
///
/// Errors: those of [`GpuDevice::count`] (no driver, no device).
pub fn claim_least_loaded() -> Result<(DeviceClaim, Choice), CudaError> {
    let count = GpuDevice::count()?;
    let mut held = claims();
    let mut readings: Vec<DeviceReading> = (0..count)
        .map(|ordinal| DeviceReading {
            ordinal,
            claims: held.get(&ordinal).copied().unwrap_or(0),
            utilisation: None,
            free_bytes: None,
        })
        .collect();
    let fewest = readings.iter().map(|r| r.claims).min().unwrap_or(0);
    let mut notes = Vec::new();
    if readings.iter().filter(|r| r.claims == fewest).count() > 1 {
        notes = read_nvml(&mut readings);
    }
    let mut choice = choose(&readings).ok_or(CudaError::NoDevice)?;
    choice.notes = notes;
    Ok((DeviceClaim::add(&mut held, choice.reading.ordinal), choice))
}

/// NVML, initialised once per process; why not, when it cannot be.
fn nvml() -> Result<&'static Nvml, &'static str> {
    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();
    NVML.get_or_init(|| Nvml::init().map_err(|e| format!("NVML unavailable: {e}")))
        .as_ref()
        .map_err(String::as_str)
}

/// The PCI bus id of CUDA device `ordinal` (`0000:65:00.0`), as NVML accepts it.
fn pci_bus_id(ordinal: usize) -> Result<String, CudaError> {
    let dev = cudarc::driver::result::device::get(ordinal as c_int)
        .map_err(|e| CudaError::driver("cuDeviceGet", e))?;
    let mut buf = [0 as c_char; 64];
    // SAFETY: the driver writes at most `len` bytes into `buf`, one fewer than it holds; the
    // driver was initialised by `GpuDevice::count`; no context is needed.
    unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as c_int - 1, dev) }
        .result()
        .map_err(|e| CudaError::driver("cuDeviceGetPCIBusId", e))?;
    // SAFETY: the last byte of `buf` stays 0, so the string ends within it.
    let id = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Ok(id.to_string_lossy().into_owned())
}

/// Fills in utilisation and free memory from NVML; returns what could not be read.
fn read_nvml(readings: &mut [DeviceReading]) -> Vec<String> {
    let nvml = match nvml() {
        Ok(n) => n,
        Err(why) => {
            return vec![format!(
                "{why}: GPU utilisation and free memory not compared"
            )]
        }
    };
    let mut notes = Vec::new();
    for r in readings.iter_mut() {
        let bus = match pci_bus_id(r.ordinal) {
            Ok(b) => b,
            Err(e) => {
                notes.push(format!("CUDA device {}: {e}", r.ordinal));
                continue;
            }
        };
        let dev = match nvml.device_by_pci_bus_id(bus.as_str()) {
            Ok(d) => d,
            Err(e) => {
                notes.push(format!(
                    "CUDA device {} (PCI {bus}) not found by NVML: {e}",
                    r.ordinal
                ));
                continue;
            }
        };
        match dev.utilization_rates() {
            Ok(u) => r.utilisation = Some(u.gpu),
            Err(e) => notes.push(format!("CUDA device {}: NVML utilisation: {e}", r.ordinal)),
        }
        match dev.memory_info() {
            Ok(m) => r.free_bytes = Some(m.free),
            Err(e) => notes.push(format!("CUDA device {}: NVML memory: {e}", r.ordinal)),
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(ordinal: usize, claims: usize, util: Option<u32>, free: Option<u64>) -> DeviceReading {
        DeviceReading {
            ordinal,
            claims,
            utilisation: util,
            free_bytes: free,
        }
    }

    fn pick(readings: &[DeviceReading]) -> (usize, Decided) {
        let c = choose(readings).expect("a choice");
        (c.reading.ordinal, c.decided)
    }

    #[test]
    fn pick_nothing_from_no_device() {
        assert_eq!(choose(&[]), None);
    }

    #[test]
    fn pick_the_only_device() {
        let c = choose(&[r(0, 5, Some(99), Some(1))]).unwrap();
        assert_eq!((c.reading.ordinal, c.decided), (0, Decided::Only));
        assert_eq!(c.to_string(), "the only CUDA device");
    }

    #[test]
    fn pick_fewest_elements_first() {
        let readings = [
            r(0, 2, Some(0), Some(80 << 30)),
            r(1, 1, Some(100), Some(1 << 30)),
            r(2, 3, Some(0), Some(80 << 30)),
        ];
        assert_eq!(pick(&readings), (1, Decided::Claims));
        assert_eq!(
            choose(&readings).unwrap().to_string(),
            "fewest vmafcompare elements: 1"
        );
    }

    #[test]
    fn pick_lowest_utilisation_among_the_tied() {
        let readings = [
            r(0, 1, Some(60), Some(80 << 30)),
            r(1, 1, Some(20), Some(1 << 30)),
            r(2, 2, Some(0), Some(80 << 30)),
        ];
        assert_eq!(pick(&readings), (1, Decided::Utilisation));
        assert_eq!(
            choose(&readings).unwrap().to_string(),
            "fewest vmafcompare elements: 1, then lowest GPU utilisation: 20%"
        );
    }

    #[test]
    fn pick_most_free_memory_then_lowest_ordinal() {
        let readings = [
            r(0, 0, Some(5), Some(10 << 20)),
            r(1, 0, Some(5), Some(30 << 20)),
        ];
        assert_eq!(pick(&readings), (1, Decided::FreeMemory));
        assert_eq!(
            choose(&readings).unwrap().to_string(),
            "fewest vmafcompare elements: 0, then most free memory: 30 MiB"
        );
        let tied = [r(3, 0, Some(5), Some(7)), r(1, 0, Some(5), Some(7))];
        assert_eq!(pick(&tied), (1, Decided::Ordinal));
    }

    #[test]
    fn pick_skips_a_criterion_unknown_for_a_tied_device() {
        // Utilisation unknown for device 1: free memory decides.
        let readings = [r(0, 0, Some(0), Some(1)), r(1, 0, None, Some(2))];
        assert_eq!(pick(&readings), (1, Decided::FreeMemory));
        // Nothing from NVML: the lowest ordinal among the fewest elements.
        let readings = [
            r(0, 1, None, None),
            r(1, 0, None, None),
            r(2, 0, None, None),
        ];
        assert_eq!(pick(&readings), (1, Decided::Ordinal));
        // A device already out of the running may lack a reading.
        let readings = [
            r(0, 1, None, None),
            r(1, 0, Some(9), None),
            r(2, 0, Some(3), None),
        ];
        assert_eq!(pick(&readings), (2, Decided::Utilisation));
    }

    #[test]
    fn pick_counts_claims_while_they_live() {
        // An ordinal no other test claims.
        const ORD: usize = 9_000;
        assert_eq!(claims_on(ORD), 0);
        let a = DeviceClaim::new(ORD);
        let b = DeviceClaim::new(ORD);
        assert_eq!((claims_on(ORD), a.ordinal()), (2, ORD));
        drop(a);
        assert_eq!(claims_on(ORD), 1);
        drop(b);
        assert_eq!(claims_on(ORD), 0);
    }
}
