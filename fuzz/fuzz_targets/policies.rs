#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| eai_fuzz::policies(data));
