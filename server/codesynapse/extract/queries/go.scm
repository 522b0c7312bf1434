; Go: functions, receiver methods (qualified by their receiver type in the hooks), types,
; interface methods, package-level constants and variables, calls, embedding, imports.
(function_declaration name: (identifier) @name) @definition.function
(method_declaration name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name type: [
  (type_identifier) (qualified_type) (pointer_type) (generic_type) (map_type) (slice_type) (array_type)
  (function_type) (channel_type)]) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(interface_type (method_elem name: (field_identifier) @name) @definition.method)
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant))
; package-level variables (sentinel errors such as io.ErrShortWrite, http.DefaultClient)
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.variable)))

(call_expression function: (_) @callee) @reference.call

; embedded struct fields and embedded interfaces: the method set is promoted
(struct_type (field_declaration_list (field_declaration !name type: (_) @inherit)))
(interface_type (type_elem [(type_identifier) (qualified_type) (generic_type)] @inherit))

(import_declaration) @import
