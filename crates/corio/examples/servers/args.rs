//! The command line the server examples share: `[ADDR] [WORKERS]`.

/// The address to listen on (`default` if not given) and a runtime with `WORKERS` worker
/// threads (the CPU count if not given).
pub fn address_and_runtime(default: &str) -> std::io::Result<(String, corio::Runtime)> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| default.into());
    let mut builder = corio::Runtime::builder();
    if let Some(w) = args.next() {
        builder.workers(w.parse().expect("WORKERS is a number"));
    }
    Ok((addr, builder.build()?))
}
