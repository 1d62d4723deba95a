//! Validation of WGSL text with naga, with the capabilities the adapter offers.

use naga::valid::{Capabilities, ValidationFlags, Validator};

use crate::{RenderError, WgslCaps};

/// Parses and validates WGSL with naga (capabilities from `caps`); the error carries naga's
/// message with the offending line.
pub fn validate(source: &str, caps: &WgslCaps) -> Result<(), RenderError> {
    let module =
        naga::front::wgsl::parse_str(source).map_err(|e| RenderError::Invalid(e.emit_to_string(source)))?;
    // pack2x16float/unpack2x16float are core WGSL; naga gates them behind this downlevel flag,
    // which wgpu grants on Vulkan, Metal and DX12
    let mut capabilities = Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    capabilities.set(Capabilities::SHADER_FLOAT16, caps.f16);
    capabilities.set(Capabilities::SHADER_INT64, caps.int64);
    capabilities.set(Capabilities::COOPERATIVE_MATRIX, caps.cooperative_matrix);
    capabilities.set(Capabilities::SUBGROUP, caps.subgroups);
    capabilities.set(Capabilities::SUBGROUP_BARRIER, caps.subgroup_barrier);
    Validator::new(ValidationFlags::all(), capabilities)
        .validate(&module)
        .map_err(|e| RenderError::Invalid(e.emit_to_string(source)))?;
    Ok(())
}
