fn main() {
    // On macOS this also leaves undefined symbols to the loader (`-undefined dynamic_lookup`):
    // the napi_* functions are the node executable's, found when node loads the addon.
    napi_build::setup();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("macos") {
        // As the main addon (../build.rs): only the libraries a symbol is bound to (not the
        // libiconv Rust's std asks for), and its own name without the build's path.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-dead_strip_dylibs");
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libtfjs_node_rs_preload.dylib"
        );
    }
}
