//! The `hubload` binary: everything happens in `hubload::app::main`.

fn main() -> std::process::ExitCode {
    hubload::app::main()
}
