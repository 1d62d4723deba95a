//! `#[derive(Module)]` for wgrad-tensor: implements `wgrad_tensor::nn::Module` for a struct
//! or enum by listing its fields' state tensors under tinygrad's names (`layers.0.weight`),
//! so a model needs no hand-written list. Use it through `wgrad_tensor::nn::Module`, which
//! re-exports it; the rules are documented there.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Data, DeriveInput, Field, Fields, GenericArgument, LitStr, PathArguments, Type, parse_macro_input,
};

/// Implements `wgrad_tensor::nn::Module` from the fields: each field's state tensors under
/// its name (a newtype's under none), fields of plain-data types skipped; see
/// `wgrad_tensor::nn::Module`.
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// The `impl Module` of `input`.
fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let body = match &input.data {
        Data::Struct(s) => {
            let (pattern, pushes) = visit_fields(&s.fields, quote!(Self))?;
            quote!(let #pattern = self; #pushes)
        }
        Data::Enum(e) => {
            let arms = e
                .variants
                .iter()
                .map(|v| {
                    let ident = &v.ident;
                    let (pattern, pushes) = visit_fields(&v.fields, quote!(Self::#ident))?;
                    Ok(quote!(#pattern => { #pushes }))
                })
                .collect::<syn::Result<Vec<_>>>()?;
            quote!(match self { #(#arms)* })
        }
        Data::Union(u) => {
            return Err(syn::Error::new(u.union_token.span, "Module cannot be derived for a union"));
        }
    };
    Ok(quote! {
        #[automatically_derived]
        impl #impl_generics ::wgrad_tensor::nn::Module for #name #ty_generics #where_clause {
            fn named_tensors(&self) -> ::std::vec::Vec<(::std::string::String, ::wgrad_tensor::Tensor)> {
                #[allow(unused_mut)]
                let mut state = ::std::vec::Vec::new();
                #body
                state
            }
        }
    })
}

/// What the derive does with one field.
enum Role {
    /// Not state: plain data or `#[module(skip)]`.
    Skip,
    /// State under this name.
    Named(String),
    /// State under the enclosing name: the one field of a newtype.
    Transparent,
}

/// The pattern that binds `path`'s fields (`Self { weight: f0, .. }`, `Self::Conv(f0)`) and
/// the statements that append each state field's tensors to `state`.
fn visit_fields(fields: &Fields, path: Tokens) -> syn::Result<(Tokens, Tokens)> {
    let newtype = matches!(fields, Fields::Unnamed(f) if f.unnamed.len() == 1);
    let mut binds = vec![];
    let mut pushes = vec![];
    for (i, field) in fields.iter().enumerate() {
        let binding = format_ident!("f{i}");
        let ty_span = field.ty.span();
        let push = match field_role(field, i, newtype)? {
            Role::Skip => None,
            Role::Named(name) => Some(quote_spanned!(ty_span=>
                state.extend(::wgrad_tensor::nn::prefixed(#name, #binding));
            )),
            Role::Transparent => Some(quote_spanned!(ty_span=>
                state.extend(::wgrad_tensor::nn::Module::named_tensors(#binding));
            )),
        };
        binds.push(push.is_some().then_some(binding));
        pushes.extend(push);
    }
    let pattern = match fields {
        Fields::Unit => path,
        Fields::Named(_) => {
            let bound = fields.iter().zip(&binds).filter_map(|(f, b)| {
                let ident = &f.ident;
                b.as_ref().map(|b| quote!(#ident: #b))
            });
            quote!(#path { #(#bound,)* .. })
        }
        Fields::Unnamed(_) => {
            let slots = binds.iter().map(|b| b.as_ref().map_or_else(|| quote!(_), |b| quote!(#b)));
            quote!(#path(#(#slots),*))
        }
    };
    Ok((pattern, quote!(#(#pushes)*)))
}

/// The role of field `index` (the only field of a newtype when `newtype`) from its
/// `#[module(skip)]` or `#[module(rename = "..")]` attribute and its type.
fn field_role(field: &Field, index: usize, newtype: bool) -> syn::Result<Role> {
    let mut skip = false;
    let mut rename = None;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("module")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip") {
                skip = true;
                Ok(())
            } else if meta.path.is_ident("rename") {
                rename = Some(meta.value()?.parse::<LitStr>()?);
                Ok(())
            } else {
                Err(meta.error("unknown module attribute: expected `skip` or `rename = \"name\"`"))
            }
        })?;
    }
    Ok(match rename {
        _ if skip => Role::Skip,
        Some(name) if name.value().is_empty() => {
            return Err(syn::Error::new(name.span(), "a state name cannot be empty"));
        }
        Some(name) => Role::Named(name.value()),
        None if is_plain_data(&field.ty) => Role::Skip,
        None if newtype => Role::Transparent,
        None => Role::Named(field.ident.as_ref().map_or_else(|| index.to_string(), ToString::to_string)),
    })
}

/// Scalar types that never hold tensors.
const PRIMITIVES: [&str; 17] = [
    "bool", "char", "f32", "f64", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64",
    "u128", "usize", "str",
];

/// Whether `ty` is plain data, skipped without an attribute: a number, `bool`, `char`,
/// `String`, `str`, or a reference, array, slice, tuple, `Vec`, `Option` or `Box` of those.
fn is_plain_data(ty: &Type) -> bool {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else { return false };
            let name = last.ident.to_string();
            match &last.arguments {
                PathArguments::None => PRIMITIVES.contains(&name.as_str()) || name == "String",
                PathArguments::AngleBracketed(args) if matches!(name.as_str(), "Vec" | "Option" | "Box") => {
                    args.args.iter().all(|a| matches!(a, GenericArgument::Type(t) if is_plain_data(t)))
                }
                _ => false,
            }
        }
        Type::Reference(r) => is_plain_data(&r.elem),
        Type::Array(a) => is_plain_data(&a.elem),
        Type::Slice(s) => is_plain_data(&s.elem),
        Type::Tuple(t) => t.elems.iter().all(is_plain_data),
        Type::Paren(p) => is_plain_data(&p.elem),
        Type::Group(g) => is_plain_data(&g.elem),
        _ => false,
    }
}
