fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("windows") {
        windows();
        return;
    }
    // On macOS this also leaves undefined symbols to the loader (`-undefined dynamic_lookup`):
    // the napi_* functions are the node executable's, found when node loads the addon.
    napi_build::setup();
    // The target's OS, not this machine's: scripts/build.js cross-builds the macOS addon.
    let macos = std::env::var("CARGO_CFG_TARGET_OS").ok().as_deref() == Some("macos");
    // tensorflow-sys links libtensorflow_cc, but the TF_Status/TF_DataType functions live in
    // libtensorflow_framework: a shared library may leave them to the loader, an executable
    // (the unit tests) must name it. On macOS it is named too, so that those symbols are bound
    // to it (two-level namespace) rather than looked up at load. The file names are LIBRARIES'
    // in js/libtensorflow_facts.js; macOS's linker has no `-l:<file>`, and
    // `-ltensorflow_framework.2` finds libtensorflow_framework.2.dylib.
    if macos {
        println!("cargo:rustc-link-lib=dylib=tensorflow_framework.2");
        // Rust's std asks for libiconv (and zig's stub of it brings libcharset), which the addon
        // never calls: load only the libraries a symbol is bound to.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-dead_strip_dylibs");
        // The dylib's own name (LC_ID_DYLIB) would be its path in the build's target dir:
        // nothing loads the addon by it, so it says no more than its file name.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libtfjs_node_rs.dylib");
    } else {
        println!("cargo:rustc-link-lib=dylib:+verbatim=libtensorflow_framework.so.2");
    }
    // `cargo test` runs executables without the addon's $ORIGIN rpath; cargo puts link search
    // paths inside the target dir on the loader path, so point one at deps/lib. deps/ holds
    // this machine's libtensorflow: a cross build (scripts/build.js --target) links against
    // the target's, found through pkg-config, and runs no tests here.
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    if let (true, Ok(out), Ok(manifest)) = (
        native,
        std::env::var("OUT_DIR"),
        std::env::var("CARGO_MANIFEST_DIR"),
    ) {
        let link = std::path::Path::new(&out).join("libtensorflow");
        let _ = std::fs::remove_file(&link);
        if std::os::unix::fs::symlink(std::path::Path::new(&manifest).join("deps/lib"), &link)
            .is_ok()
        {
            println!("cargo:rustc-link-search=native={}", link.display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    // libtensorflow is found at run time next to the addon, wherever npm put it:
    // - a development checkout: <repo>/deps/lib beside <repo>/tfjs-node-rs.*.node;
    // - a per-platform package: node_modules/tfjs-node-rs-<platform>/ beside node_modules/tfjs-node-rs/deps/lib
    //   (or nested under the root package's own node_modules);
    // - the same, with the root package installed as `@tensorflow/tfjs-node` (npm's alias
    //   `@tensorflow/tfjs-node@npm:tfjs-node-rs`, so that libraries made for tfjs-node load it);
    // - the NVIDIA GPU package `tfjs-node-rs-gpu` (or its alias `@tensorflow/tfjs-node-gpu`),
    //   which ships no addon of its own: it uses this one, with its own libtensorflow.
    // Each is relative to the addon's own folder: $ORIGIN on Linux, @loader_path on macOS
    // (where the dylibs' install names, @rpath/<name>, are looked up in these).
    let origin = if macos { "@loader_path" } else { "$ORIGIN" };
    for dir in [
        "deps/lib",
        "../tfjs-node-rs/deps/lib",
        "../@tensorflow/tfjs-node/deps/lib",
        "../tfjs-node-rs-gpu/deps/lib",
        "../@tensorflow/tfjs-node-gpu/deps/lib",
        "../../deps/lib",
    ] {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,{origin}/{dir}");
    }
}

// Windows x64 (x86_64-pc-windows-gnu): TensorFlow's C API is _pywrap_tensorflow_common.dll from
// the tensorflow-cpu wheel, linked through an import library that tensorflow-sys finds with
// pkg-config. napi-build's windows-gnu setup would link libnode.dll; node.exe exports N-API
// itself and napi-sys's dyn-symbols feature (Cargo.toml) looks it up in the host process at load,
// so it is not called. There is no rpath: the JS loader puts the DLL's folder on the search path.
fn windows() {
    println!("cargo:rerun-if-changed=build.rs");
}
