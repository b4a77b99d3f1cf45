//! Run-time compilation of the kernel modules with NVRTC into cubins for one exact architecture,
//! with an on-disk cache keyed by source hash, architecture, NVRTC version and options. A cache
//! entry is the cubin followed by its SHA-256: a damaged entry (a truncated write, a full disk, a
//! flipped bit) is compiled again and rewritten instead of being handed to the driver, which
//! would fail to load it and leave the GPU unusable until someone cleared the cache.

use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::time::Instant;

use cudarc::nvrtc::{result as nv, sys as nvsys};
use sha2::{Digest, Sha256};

use super::sources::Module;

/// Options given to NVRTC besides the architecture. `-Xptxas -v` puts registers, shared memory,
/// stack frame and spills of every kernel into the compile log.
const OPTIONS: [&str; 4] = [
    "--std=c++17",
    "--extra-device-vectorization",
    "--ptxas-options=-v",
    "-DCUZK_NVRTC=1",
];

/// A compiled module.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub module: Module,
    /// `sm_XY`.
    pub arch: String,
    pub cubin: Vec<u8>,
    /// NVRTC's log (ptxas resource usage); empty when loaded from the cache.
    pub log: String,
    pub compile_secs: f64,
    pub from_cache: bool,
}

/// Why NVRTC is unusable, or what failed in a compile.
pub fn nvrtc_present() -> Result<(i32, i32), String> {
    // SAFETY: only probes for the shared library; no symbol is called when it is absent.
    if !unsafe { nvsys::is_culib_present() } {
        return Err("libnvrtc (NVRTC 13) is not on the loader path".into());
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    let rc = unsafe { nvsys::nvrtcVersion(&mut major, &mut minor) };
    if rc != nvsys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcVersion failed: {rc:?}"));
    }
    Ok((major, minor))
}

/// The cache directory: `$CUZK_KERNEL_CACHE`, else `$XDG_CACHE_HOME/cuzk/kernels`, else
/// `$HOME/.cache/cuzk/kernels`, else the system temp dir.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CUZK_KERNEL_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("cuzk/kernels");
    }
    if let Some(d) = std::env::var_os("HOME") {
        return PathBuf::from(d).join(".cache/cuzk/kernels");
    }
    std::env::temp_dir().join("cuzk-kernels")
}

/// Extra NVRTC options from `CUZK_NVRTC_OPTIONS` (whitespace separated), for tuning runs such as
/// `-DCUZK_G1_MIN_BLOCKS=5`; they are part of the cache key.
fn extra_options() -> Vec<String> {
    std::env::var("CUZK_NVRTC_OPTIONS")
        .map(|v| v.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

fn cache_key(source: &str, arch: &str, version: (i32, i32)) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    h.update(arch.as_bytes());
    h.update(format!("nvrtc {}.{}", version.0, version.1).as_bytes());
    for o in OPTIONS {
        h.update(o.as_bytes());
    }
    for o in extra_options() {
        h.update(o.as_bytes());
    }
    h.finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Compiles `module` for `sm_{major}{minor}`, using the disk cache unless `use_cache` is false.
pub fn compile(module: Module, cc: (i32, i32), use_cache: bool) -> Result<Compiled, String> {
    let version = nvrtc_present()?;
    let arch = format!("sm_{}{}", cc.0, cc.1);
    let source = module.source();
    let key = cache_key(&source, &arch, version);
    let path = cache_dir().join(format!("{}-{}-{}.cubin", module.name(), arch, key));
    if use_cache {
        match read_entry(&path) {
            Entry::Good(cubin) => {
                return Ok(Compiled {
                    module,
                    arch,
                    cubin,
                    log: String::new(),
                    compile_secs: 0.0,
                    from_cache: true,
                })
            }
            Entry::Damaged => log::warn!(
                "kernel cache entry {} is damaged (checksum mismatch); compiling it again",
                path.display()
            ),
            Entry::Missing => {}
        }
    }
    let start = Instant::now();
    let (cubin, log) = nvrtc_cubin(module, &source, &arch)?;
    let compile_secs = start.elapsed().as_secs_f64();
    if use_cache {
        // A cache that cannot be written only costs a recompile next time.
        if std::fs::create_dir_all(cache_dir()).is_ok() {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            let entry = [&cubin[..], &Sha256::digest(&cubin)[..]].concat();
            if std::fs::write(&tmp, &entry).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
    }
    Ok(Compiled {
        module,
        arch,
        cubin,
        log,
        compile_secs,
        from_cache: false,
    })
}

/// Compiles (or loads from the cache) each of `modules`, all at once, a thread each: NVRTC
/// compiles separate programs concurrently, so a cold start costs about the slowest module rather
/// than the sum of them. Results in the order of `modules`.
pub fn compile_all(
    modules: &[Module],
    cc: (i32, i32),
    use_cache: bool,
) -> Vec<Result<Compiled, String>> {
    std::thread::scope(|s| {
        let threads: Vec<_> = modules
            .iter()
            .map(|&m| (m, s.spawn(move || compile(m, cc, use_cache))))
            .collect();
        threads
            .into_iter()
            .map(|(m, t)| {
                t.join().unwrap_or_else(|_| {
                    Err(format!(
                        "NVRTC module {}: the compiling thread panicked",
                        m.name()
                    ))
                })
            })
            .collect()
    })
}

/// What the cache holds for a key.
enum Entry {
    Good(Vec<u8>),
    Damaged,
    Missing,
}

/// A cache entry: the cubin, then the SHA-256 of the cubin (32 bytes).
fn read_entry(path: &Path) -> Entry {
    let Ok(mut data) = std::fs::read(path) else {
        return Entry::Missing;
    };
    if data.len() <= 32 {
        return Entry::Damaged;
    }
    let len = data.len() - 32;
    if Sha256::digest(&data[..len])[..] != data[len..] {
        return Entry::Damaged;
    }
    data.truncate(len);
    Entry::Good(data)
}

fn nvrtc_cubin(module: Module, source: &str, arch: &str) -> Result<(Vec<u8>, String), String> {
    let where_ = format!("NVRTC module {} for {arch}", module.name());
    let src = CString::new(source).map_err(|_| format!("{where_}: source contains a NUL byte"))?;
    let name = CString::new(format!("{}.cu", module.name())).map_err(|e| e.to_string())?;
    let prog =
        nv::create_program(&src, Some(&name)).map_err(|e| format!("{where_}: create: {e:?}"))?;
    let mut opts: Vec<String> = OPTIONS.iter().map(|s| s.to_string()).collect();
    opts.push(format!("--gpu-architecture={arch}"));
    opts.extend(extra_options());
    // SAFETY: prog was created above and is destroyed once below.
    let res = unsafe { nv::compile_program(prog, &opts) };
    let log = unsafe { nv::get_program_log(prog) }
        .map(|v| {
            let bytes: Vec<u8> = v
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .unwrap_or_default();
    let out = match res {
        Err(e) => Err(format!("{where_}: compile failed ({e:?}):\n{log}")),
        Ok(()) => get_cubin(prog).map_err(|e| format!("{where_}: {e}")),
    };
    // SAFETY: prog is valid and not used afterwards.
    let _ = unsafe { nv::destroy_program(prog) };
    out.map(|c| (c, log))
}

fn get_cubin(prog: nvsys::nvrtcProgram) -> Result<Vec<u8>, String> {
    let mut size = 0usize;
    // SAFETY: prog is a compiled program; size is an out-parameter.
    let rc = unsafe { nvsys::nvrtcGetCUBINSize(prog, &mut size) };
    if rc != nvsys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
        return Err(format!("nvrtcGetCUBINSize failed: {rc:?} (size {size})"));
    }
    let mut buf = vec![0u8; size];
    // SAFETY: buf holds `size` bytes as NVRTC asked.
    let rc = unsafe { nvsys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut c_char) };
    if rc != nvsys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcGetCUBIN failed: {rc:?}"));
    }
    Ok(buf)
}
