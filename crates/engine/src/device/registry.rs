//! The device registry: device names, opening each device once, and the default device
//! (`WGRAD_DEVICE=cpu|wgpu[:N]`, else wgpu when an adapter exists, else the CPU).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use super::{Backend, CpuBackend, Created, Held, WgpuBackend};
use crate::{EngineError, flags};

/// The environment variable that picks the default device.
pub const DEVICE_ENV: &str = "WGRAD_DEVICE";

/// A device by name: the CPU interpreter or a wgpu adapter (`None`: the best one).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceName {
    /// The CPU interpreter.
    Cpu,
    /// A wgpu adapter: by index among the adapters, or the best one.
    Wgpu(Option<usize>),
}

impl FromStr for DeviceName {
    type Err = EngineError;

    /// `cpu`, `wgpu` or `wgpu:N`, in any case.
    fn from_str(s: &str) -> Result<DeviceName, EngineError> {
        let lower = s.trim().to_ascii_lowercase();
        let name = match lower.split_once(':') {
            None if lower == "cpu" => Some(DeviceName::Cpu),
            None if lower == "wgpu" => Some(DeviceName::Wgpu(None)),
            Some(("wgpu", n)) => n.parse().ok().map(|n| DeviceName::Wgpu(Some(n))),
            _ => None,
        };
        name.ok_or_else(|| EngineError::UnknownDevice(s.into()))
    }
}

impl fmt::Display for DeviceName {
    /// `CPU`, `WGPU`, `WGPU:1`: the spelling DEVICE UOps carry.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceName::Cpu => f.write_str("CPU"),
            DeviceName::Wgpu(None) => f.write_str("WGPU"),
            DeviceName::Wgpu(Some(n)) => write!(f, "WGPU:{n}"),
        }
    }
}

type Opened = Result<Arc<dyn Backend>, String>;

/// Every device opened so far (or the reason it could not be), by name.
static OPENED: LazyLock<Mutex<HashMap<DeviceName, Opened>>> = LazyLock::new(Mutex::default);

fn open(name: &DeviceName) -> Result<Arc<dyn Backend>, EngineError> {
    match name {
        DeviceName::Cpu => Ok(Arc::new(CpuBackend::new())),
        DeviceName::Wgpu(index) => Ok(Arc::new(WgpuBackend::open(*index)?)),
    }
}

/// The backend of `name`, opened on first use and shared afterwards.
pub fn open_device(name: &DeviceName) -> Result<Arc<dyn Backend>, EngineError> {
    let mut opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
    let entry = opened.entry(name.clone()).or_insert_with(|| {
        let backend = open(name).map_err(|e| match e {
            EngineError::DeviceUnavailable { reason, .. } => reason,
            e => e.to_string(),
        });
        if let (Ok(b), true) = (&backend, flags::debug() >= 1) {
            eprintln!("opened device {name}: {}", b.name());
        }
        backend
    });
    entry.clone().map_err(|reason| EngineError::DeviceUnavailable { name: name.to_string(), reason })
}

/// The device tensors go to when none is named: `WGRAD_DEVICE` if set, else wgpu when it
/// opens, else the CPU (saying so once on stderr).
pub fn default_device() -> Result<DeviceName, EngineError> {
    static DEFAULT: LazyLock<Result<DeviceName, String>> =
        LazyLock::new(|| match std::env::var(DEVICE_ENV) {
            Ok(v) => v.parse().map_err(|e: EngineError| e.to_string()),
            Err(_) => Ok(match open_device(&DeviceName::Wgpu(None)) {
                Ok(_) => DeviceName::Wgpu(None),
                Err(e) => {
                    eprintln!("wgrad: falling back to the CPU interpreter ({e})");
                    DeviceName::Cpu
                }
            }),
        });
    DEFAULT.clone().map_err(EngineError::UnknownDevice)
}

/// The devices that open on this machine: the CPU, and wgpu when an adapter exists.
pub fn available_devices() -> Vec<DeviceName> {
    [DeviceName::Cpu, DeviceName::Wgpu(None)].into_iter().filter(|d| open_device(d).is_ok()).collect()
}

/// Bytes of device memory allocated now, over every opened device.
pub fn memory_used() -> usize {
    let opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
    opened.values().flatten().map(|b| b.memory_used()).sum()
}

/// Device objects held now, over every opened device.
pub fn held() -> Held {
    let opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
    opened.values().flatten().map(|b| b.held()).fold(Held::default(), |a, h| Held {
        buffers: a.buffers + h.buffers,
        bind_groups: a.bind_groups + h.bind_groups,
        pipelines: a.pipelines + h.pipelines,
    })
}

/// Device objects created so far, over every opened device.
pub fn created() -> Created {
    let opened = OPENED.lock().unwrap_or_else(PoisonError::into_inner);
    opened.values().flatten().map(|b| b.created()).fold(Created::default(), |a, c| Created {
        buffers: a.buffers + c.buffers,
        bind_groups: a.bind_groups + c.bind_groups,
        submits: a.submits + c.submits,
    })
}
