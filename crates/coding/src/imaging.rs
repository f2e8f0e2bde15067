//! Images: magic-byte detection, header dimension checks, bounded downscale under decoder limits (a
//! decompression bomb is refused, never decoded), and a small base64 encoder.

use crate::errors::too_large;
use crate::workspace::Limits;
use image::{ImageFormat, ImageReader};
use portcullis_harness::CallErrorCode;
use portcullis_harness::ToolError;
use std::io::Cursor;

/// An image format the `read` tool returns as an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageKind {
    pub fn mime_type(self) -> &'static str {
        match self {
            ImageKind::Png => "image/png",
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Gif => "image/gif",
            ImageKind::Webp => "image/webp",
        }
    }

    fn format(self) -> ImageFormat {
        match self {
            ImageKind::Png => ImageFormat::Png,
            ImageKind::Jpeg => ImageFormat::Jpeg,
            ImageKind::Gif => ImageFormat::Gif,
            ImageKind::Webp => ImageFormat::WebP,
        }
    }
}

/// Bytes needed to recognize every supported format.
pub const MAGIC_LEN: usize = 12;

/// Recognizes png, jpeg, gif and webp by their first bytes.
pub fn sniff(head: &[u8]) -> Option<ImageKind> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageKind::Png)
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageKind::Jpeg)
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some(ImageKind::Gif)
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some(ImageKind::Webp)
    } else {
        None
    }
}

/// Length of the base64 text of `n` bytes (with padding).
pub fn base64_len(n: u64) -> u64 {
    n.div_ceil(3) * 4
}

/// Standard base64 with padding.
pub fn base64_encode(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let sextet = |shift: u32| char::from(ALPHABET[((n >> shift) & 0x3F) as usize]);
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

/// An image ready to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedImage {
    pub bytes: Vec<u8>,
    pub mime_type: &'static str,
    pub width: u32,
    pub height: u32,
    /// Original dimensions when it was downscaled.
    pub resized_from: Option<(u32, u32)>,
}

fn refused(message: impl Into<String>) -> ToolError {
    ToolError::new(CallErrorCode::ImageRefused, message)
}

/// Checks an image's declared dimensions (header only) and downscales it to `max_dimension` when it is
/// larger, decoding under the configured limits. The result's base64 is checked against the byte bound.
pub fn prepare(
    bytes: Vec<u8>,
    kind: ImageKind,
    max_dimension: Option<u32>,
    limits: &Limits,
) -> Result<PreparedImage, ToolError> {
    let (width, height) = ImageReader::with_format(Cursor::new(&bytes), kind.format())
        .into_dimensions()
        .map_err(|e| refused(format!("could not read the image header: {e}")))?;
    if width > limits.image_max_side || height > limits.image_max_side {
        return Err(refused(format!(
            "the image declares {width}x{height} pixels, over the limit of {} per side",
            limits.image_max_side
        ))
        .with_details(
            serde_json::json!({ "width": width, "height": height, "max_side": limits.image_max_side }),
        ));
    }
    let bound = limits.image_bytes_bound();
    let Some(max) = max_dimension.filter(|max| width.max(height) > *max) else {
        check_bound(bytes.len(), bound)?;
        return Ok(PreparedImage { bytes, mime_type: kind.mime_type(), width, height, resized_from: None });
    };
    let max = max.max(1);
    let mut reader = ImageReader::with_format(Cursor::new(&bytes), kind.format());
    let mut decoder_limits = image::Limits::default();
    decoder_limits.max_image_width = Some(limits.image_max_side);
    decoder_limits.max_image_height = Some(limits.image_max_side);
    decoder_limits.max_alloc = Some(limits.image_max_alloc);
    reader.limits(decoder_limits);
    let decoded =
        reader.decode().map_err(|e| refused(format!("the image could not be decoded within limits: {e}")))?;
    let resized = decoded.resize(max, max, image::imageops::FilterType::Triangle);
    let (out_kind, out_image) = match kind {
        ImageKind::Jpeg => (ImageKind::Jpeg, image::DynamicImage::ImageRgb8(resized.to_rgb8())),
        _ => (ImageKind::Png, resized),
    };
    let mut encoded = Vec::new();
    out_image
        .write_to(&mut Cursor::new(&mut encoded), out_kind.format())
        .map_err(|e| refused(format!("could not encode the resized image: {e}")))?;
    check_bound(encoded.len(), bound)?;
    Ok(PreparedImage {
        bytes: encoded,
        mime_type: out_kind.mime_type(),
        width: out_image.width(),
        height: out_image.height(),
        resized_from: Some((width, height)),
    })
}

fn check_bound(len: usize, bound: u64) -> Result<(), ToolError> {
    let encoded = base64_len(len as u64);
    if encoded > bound {
        return Err(too_large("the image's base64 payload", encoded, bound));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{ImageKind, base64_encode, base64_len, sniff};

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(input.as_bytes()), expected);
            assert_eq!(base64_len(input.len() as u64), expected.len() as u64);
        }
    }

    #[test]
    fn sniffs_magic_bytes() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some(ImageKind::Png));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(ImageKind::Jpeg));
        assert_eq!(sniff(b"GIF89a"), Some(ImageKind::Gif));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBP"), Some(ImageKind::Webp));
        assert_eq!(sniff(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(sniff(b"hello"), None);
    }
}
