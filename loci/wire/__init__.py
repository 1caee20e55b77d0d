"""The API's wire records (msgspec Structs), shared by the server and the client: the server validates
requests and encodes answers with them, `loci.client` sends and decodes them. They import nothing but
msgspec and the standard library, so the client distribution (`loci-client`) ships them without the
server."""
