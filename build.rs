fn main() {
    napi_build::setup();
    // libtensorflow is found at run time next to the addon, wherever npm put it:
    // - a development checkout: <repo>/deps/lib beside <repo>/tfjs-node-rs.*.node;
    // - a per-platform package: node_modules/tfjs-node-rs-<platform>/ beside node_modules/tfjs-node-rs/deps/lib
    //   (or nested under the root package's own node_modules).
    for dir in [
        "$ORIGIN/deps/lib",
        "$ORIGIN/../tfjs-node-rs/deps/lib",
        "$ORIGIN/../../deps/lib",
    ] {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,{dir}");
    }
}
