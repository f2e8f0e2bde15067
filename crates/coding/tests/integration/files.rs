//! read / write / edit through the dispatcher: text bounds, image bounds (stat before reading,
//! decompression bombs), atomic writes with parents, serialized writes, unique edits.

use crate::common;
use portcullis_harness::CallErrorCode;

use crate::common::{code, fixture, fixture_with, mode_of, output, set_mode, write};
use portcullis_coding::Limits;
use portcullis_harness::{BlockedReason, Content};
use serde_json::json;
use std::fs::File;

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    let mut body = kind.to_vec();
    body.extend_from_slice(data);
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
    out
}

/// A tiny PNG that declares 100000 x 100000 RGBA pixels.
fn png_bomb() -> Vec<u8> {
    let mut ihdr = 100_000u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&100_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(chunk(b"IHDR", &ihdr));
    png.extend(chunk(b"IDAT", &[0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]));
    png.extend(chunk(b"IEND", &[]));
    png
}

#[tokio::test]
async fn reads_text_with_offset_and_limit() {
    let fx = fixture();
    write(&fx.root().join("f.txt"), "one\ntwo\nthree\nfour\n");
    let result = fx.call("read", json!({"path": "f.txt", "offset": 2, "limit": 2})).await;
    let out = output(&result);
    assert_eq!(out.joined_text(), "two\nthree\n");
    let s = out.structured.as_ref().unwrap();
    assert_eq!(
        (s["lines"].as_u64(), s["truncated"].as_bool(), s["next_offset"].as_u64()),
        (Some(2), Some(true), Some(4))
    );
    let result = fx.call("read", json!({"path": "f.txt", "offset": 4})).await;
    assert_eq!(output(&result).joined_text(), "four\n");
}

#[tokio::test]
async fn text_reads_are_bounded_in_bytes_and_binary_is_refused() {
    let fx = fixture_with(Limits { read_text_bytes: 10, ..Limits::default() }, &[]);
    write(&fx.root().join("f.txt"), "0123456789abcdef\nmore\n");
    let result = fx.call("read", json!({"path": "f.txt"})).await;
    let out = output(&result);
    assert!(
        out.joined_text().starts_with("0123456789\n[output truncated at 10 bytes"),
        "{}",
        out.joined_text()
    );
    std::fs::write(fx.root().join("bin"), b"ab\0cd").unwrap();
    assert_eq!(code(&fx.call("read", json!({"path": "bin"})).await), CallErrorCode::NotText);
}

#[tokio::test]
async fn oversized_images_are_refused_by_stat_before_reading() {
    let fx = fixture();
    let path = fx.root().join("huge.png");
    std::fs::write(&path, b"\x89PNG\r\n\x1a\n").unwrap();
    // Sparse: 20 MB by size, nothing on disk; a read of it would take long and use memory.
    File::options().write(true).open(&path).unwrap().set_len(20_000_000).unwrap();
    let result = fx.call("read", json!({"path": "huge.png"})).await;
    assert_eq!(code(&result), CallErrorCode::TooLarge);
    assert_eq!(result.error().unwrap().details.as_ref().unwrap()["limit"], 10_000_000);
}

#[tokio::test]
async fn the_image_bound_is_capped_at_32_mib() {
    let fx = fixture_with(Limits { image_bytes: 1 << 40, ..Limits::default() }, &[]);
    let path = fx.root().join("huge.gif");
    std::fs::write(&path, b"GIF89a").unwrap();
    File::options().write(true).open(&path).unwrap().set_len(33 * 1024 * 1024).unwrap();
    let result = fx.call("read", json!({"path": "huge.gif"})).await;
    assert_eq!(code(&result), CallErrorCode::TooLarge);
    assert_eq!(result.error().unwrap().details.as_ref().unwrap()["limit"], 32 * 1024 * 1024);
}

#[tokio::test]
async fn a_decompression_bomb_is_refused_not_decoded() {
    let fx = fixture();
    std::fs::write(fx.root().join("bomb.png"), png_bomb()).unwrap();
    let result = fx.call("read", json!({"path": "bomb.png"})).await;
    assert_eq!(code(&result), CallErrorCode::ImageRefused);
    let result = fx.call("read", json!({"path": "bomb.png", "max_dimension": 64})).await;
    assert_eq!(code(&result), CallErrorCode::ImageRefused);
    // Even with the per-side limit lifted, the decoder's allocation limit refuses it.
    let fx = fixture_with(Limits { image_max_side: 1_000_000, ..Limits::default() }, &[]);
    std::fs::write(fx.root().join("bomb.png"), png_bomb()).unwrap();
    let result = fx.call("read", json!({"path": "bomb.png", "max_dimension": 64})).await;
    assert_eq!(code(&result), CallErrorCode::ImageRefused, "{result:?}");
}

#[tokio::test]
async fn images_are_returned_as_base64_and_downscaled_on_request() {
    let fx = fixture();
    let img = image::RgbImage::from_fn(64, 32, |x, y| image::Rgb([x as u8 * 4, y as u8 * 8, 128]));
    img.save(fx.root().join("pic.png")).unwrap();
    let result = fx.call("read", json!({"path": "pic.png"})).await;
    let out = output(&result);
    let [Content::Image { data, mime_type }] = out.content.as_slice() else { panic!("{out:?}") };
    assert_eq!(mime_type, "image/png");
    assert!(data.starts_with("iVBORw0KGgo"));
    assert_eq!(out.structured.as_ref().unwrap()["width"], 64);
    let result = fx.call("read", json!({"path": "pic.png", "max_dimension": 16})).await;
    let s = output(&result).structured.clone().unwrap();
    assert_eq!((s["width"].as_u64(), s["height"].as_u64()), (Some(16), Some(8)));
    assert_eq!(s["resized_from"]["width"], 64);
    // A configured bound applies without being asked, and a call cannot ask for more.
    let fx = fixture_with(Limits { image_max_dimension: Some(32), ..Limits::default() }, &[]);
    img.save(fx.root().join("pic.png")).unwrap();
    for args in [json!({"path": "pic.png"}), json!({"path": "pic.png", "max_dimension": 1000})] {
        let s = output(&fx.call("read", args).await).structured.clone().unwrap();
        assert_eq!((s["width"].as_u64(), s["height"].as_u64()), (Some(32), Some(16)));
    }
    let s = output(&fx.call("read", json!({"path": "pic.png", "max_dimension": 8})).await)
        .structured
        .clone()
        .unwrap();
    assert_eq!(s["width"].as_u64(), Some(8));
}

#[tokio::test]
async fn base64_over_the_bound_is_never_returned() {
    let img = image::RgbImage::from_fn(8, 8, |x, y| image::Rgb([x as u8 * 30, y as u8 * 30, 7]));
    let scratch = tempfile::tempdir().unwrap();
    img.save(scratch.path().join("pic.png")).unwrap();
    let size = std::fs::metadata(scratch.path().join("pic.png")).unwrap().len();
    // The file passes the stat check (size == bound) but its base64 (4/3 of it) would not.
    let fx = fixture_with(Limits { image_bytes: size, ..Limits::default() }, &[]);
    std::fs::copy(scratch.path().join("pic.png"), fx.root().join("pic.png")).unwrap();
    assert_eq!(code(&fx.call("read", json!({"path": "pic.png"})).await), CallErrorCode::TooLarge);
}

#[tokio::test]
async fn write_creates_parents_and_replaces_atomically() {
    let fx = fixture();
    let result = fx.call("write", json!({"path": "a/b/c/new.txt", "content": "hello"})).await;
    assert_eq!(output(&result).structured.as_ref().unwrap()["created"], true);
    let path = fx.root().join("a/b/c/new.txt");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    let result = fx.call("write", json!({"path": "a/b/c/new.txt", "content": "bye"})).await;
    assert_eq!(output(&result).structured.as_ref().unwrap()["created"], false);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "bye");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o640, "permissions kept");
    let names: Vec<_> =
        std::fs::read_dir(fx.root().join("a/b/c")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("new.txt")], "no temp files left");
}

#[tokio::test]
async fn write_bounds_and_directories() {
    let fx = fixture_with(Limits { write_bytes: 4, ..Limits::default() }, &[]);
    let result = fx.call("write", json!({"path": "f.txt", "content": "12345"})).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ValidationFailed));
    std::fs::create_dir(fx.root().join("dir")).unwrap();
    assert_eq!(
        code(&fx.call("write", json!({"path": "dir", "content": "x"})).await),
        CallErrorCode::NotAFile
    );
    assert_eq!(
        code(&fx.call("write", json!({"path": "f.txt", "content": "x", "extra": 1})).await),
        CallErrorCode::ValidationFailed
    );
}

#[tokio::test]
async fn concurrent_writes_to_one_path_are_serialized() {
    let fx = fixture();
    let contents: Vec<String> = (0..16).map(|i| format!("{i}").repeat(10_000)).collect();
    let calls = contents.iter().map(|c| fx.call("write", json!({"path": "f.txt", "content": c})));
    for result in futures::future::join_all(calls).await {
        assert!(result.is_finished(), "{result:?}");
    }
    let final_content = std::fs::read_to_string(fx.root().join("f.txt")).unwrap();
    assert!(contents.contains(&final_content));
    assert_eq!(std::fs::read_dir(fx.root()).unwrap().count(), 1, "no temp files left");
}

#[tokio::test]
async fn edit_replaces_a_unique_match() {
    let fx = fixture();
    write(&fx.root().join("f.rs"), "fn a() {}\nfn b() {}\n");
    let result = fx.call("edit", json!({"path": "f.rs", "old_string": "fn b", "new_string": "fn c"})).await;
    assert_eq!(output(&result).structured.as_ref().unwrap()["line"], 2);
    assert_eq!(std::fs::read_to_string(fx.root().join("f.rs")).unwrap(), "fn a() {}\nfn c() {}\n");
}

#[tokio::test]
async fn edit_fails_clearly_on_no_match_or_several() {
    let fx = fixture();
    write(&fx.root().join("f.txt"), "x y x");
    let result = fx.call("edit", json!({"path": "f.txt", "old_string": "z", "new_string": "w"})).await;
    assert_eq!(code(&result), CallErrorCode::NoMatch);
    let result = fx.call("edit", json!({"path": "f.txt", "old_string": "x", "new_string": "w"})).await;
    assert_eq!(code(&result), CallErrorCode::NotUnique);
    assert_eq!(result.error().unwrap().details.as_ref().unwrap()["matches"], 2);
    assert_eq!(std::fs::read_to_string(fx.root().join("f.txt")).unwrap(), "x y x", "file untouched");
    let result = fx.call("edit", json!({"path": "f.txt", "old_string": "", "new_string": "w"})).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ValidationFailed));
}

#[tokio::test]
async fn edit_is_size_bounded() {
    let fx = fixture_with(Limits { edit_bytes: 8, ..Limits::default() }, &[]);
    write(&fx.root().join("big.txt"), "0123456789");
    let result = fx.call("edit", json!({"path": "big.txt", "old_string": "0", "new_string": "x"})).await;
    assert_eq!(code(&result), CallErrorCode::TooLarge);
    write(&fx.root().join("small.txt"), "abc");
    let result =
        fx.call("edit", json!({"path": "small.txt", "old_string": "b", "new_string": "0123456789"})).await;
    assert_eq!(code(&result), CallErrorCode::TooLarge);
}

#[test]
fn specs_have_strict_schemas_and_annotations() {
    let fx = fixture();
    let tools = portcullis_coding::coding_tools(&fx.workspace);
    let names: Vec<_> = tools.iter().map(|t| t.spec().name.clone()).collect();
    assert_eq!(names, ["shell", "read", "write", "edit"]);
    for tool in &tools {
        let spec = tool.spec();
        let schema = spec.parameters.as_ref().unwrap();
        assert_eq!(schema["additionalProperties"], false, "{}", spec.name);
        assert!(schema["required"].as_array().is_some_and(|r| !r.is_empty()), "{}", spec.name);
        assert_eq!(spec.annotations.read_only, spec.name == "read");
        assert_eq!(spec.annotations.destructive, spec.name != "read");
    }
}

/// A writable executable (a sample hook, a script) must not become a program the agent wrote: writing
/// over it leaves no execute bit, and a new file never gets one.
#[tokio::test]
async fn write_never_leaves_execute_bits() {
    let fx = fixture();
    let hook = fx.root().join(".git/hooks/pre-commit.sample");
    write(&hook, "#!/bin/sh\nexit 0\n");
    set_mode(&hook, 0o755);
    let result = fx
        .call("write", json!({"path": ".git/hooks/pre-commit.sample", "content": "#!/bin/sh\nevil\n"}))
        .await;
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), "#!/bin/sh\nevil\n");
    assert_eq!(mode_of(&hook), 0o644, "the old mode without its x bits");
    assert_eq!(output(&result).structured.as_ref().unwrap()["executable"], false);
    // Set-id bits go too.
    set_mode(&hook, 0o4750);
    fx.call("write", json!({"path": ".git/hooks/pre-commit.sample", "content": "x"})).await;
    assert_eq!(mode_of(&hook), 0o640);
    // A new file: 0666 & umask, never x.
    fx.call("write", json!({"path": "new.sh", "content": "#!/bin/sh\n"})).await;
    assert_eq!(mode_of(&fx.root().join("new.sh")) & 0o111, 0);
}

/// Asking for an executable file works, and the action says so (operation and risk) for the policy.
#[tokio::test]
async fn an_executable_write_is_asked_for_and_described() {
    use portcullis_harness::{Risk, Tool};
    let fx = fixture();
    let tool = portcullis_coding::WriteTool::new(fx.workspace.clone());
    let ctx = common::ctx();
    let plain = tool.describe_action(&json!({"path": "run.sh", "content": "x"}), &ctx).unwrap();
    assert_eq!((plain.operation.as_ref(), plain.risk), ("write", Risk::Medium));
    let args = json!({"path": "run.sh", "content": "#!/bin/sh\n", "executable": true});
    let action = tool.describe_action(&args, &ctx).unwrap();
    assert_eq!((action.operation.as_ref(), action.risk), ("write_executable", Risk::High));
    let result = fx.call("write", args.clone()).await;
    assert_eq!(output(&result).structured.as_ref().unwrap()["executable"], true);
    let path = fx.root().join("run.sh");
    assert_eq!(mode_of(&path) & 0o100, 0o100, "new executable file");
    set_mode(&path, 0o640);
    fx.call("write", args).await;
    assert_eq!(mode_of(&path), 0o750, "x wherever r");
    let result = fx.call("write", json!({"path": "run.sh", "content": "x", "executable": "yes"})).await;
    assert_eq!(result.blocked_reason(), Some(BlockedReason::ValidationFailed));
}

/// `edit` keeps a script runnable but never adds an execute bit.
#[tokio::test]
async fn edit_keeps_but_never_adds_execute_bits() {
    let fx = fixture();
    let script = fx.root().join("build.sh");
    write(&script, "#!/bin/sh\necho one\n");
    set_mode(&script, 0o755);
    let result = fx.call("edit", json!({"path": "build.sh", "old_string": "one", "new_string": "two"})).await;
    assert!(result.is_finished(), "{result:?}");
    assert_eq!(mode_of(&script), 0o755);
    let plain = fx.root().join("notes.txt");
    write(&plain, "one");
    set_mode(&plain, 0o640);
    fx.call("edit", json!({"path": "notes.txt", "old_string": "one", "new_string": "two"})).await;
    assert_eq!(mode_of(&plain), 0o640);
}
