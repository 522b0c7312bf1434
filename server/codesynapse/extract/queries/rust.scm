; Rust: items, impl methods (owned by the impl's type in the hooks), traits, inline modules,
; crate-level constants, calls, trait implementations and supertraits, use declarations.
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name body: (declaration_list)) @definition.module
(source_file (const_item name: (identifier) @name) @definition.constant)
(source_file (static_item name: (identifier) @name) @definition.constant)

(call_expression function: (_) @callee) @reference.call

(impl_item trait: (_) @implements)
(trait_item bounds: (trait_bounds [(type_identifier) (scoped_type_identifier) (generic_type)] @inherit))

(use_declaration) @import
